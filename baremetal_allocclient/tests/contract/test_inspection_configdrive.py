"""Fake inspection, and the config drive a deploy keeps, on both targets."""

from __future__ import annotations

from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.functional import targets

_V = "1.73"


class InspectionContract(base.ContractMixin):
    """``inspect`` from manageable, and ``configdrive`` with deploy."""

    def test_inspection_returns_to_manageable(self) -> None:
        _rc, (node,) = self.enroll(1)
        uuid = node["uuid"]
        response = self.target.set_provision(uuid, "inspect")
        self.assertError(response, 400, 'The requested action "inspect" can '
                         'not be performed', 'in state "available"')
        self.assertEqual(202, self.target.set_provision(
            uuid, "manage").status_code)
        self.target.wait_node(uuid, base.settled("manageable"))
        self.assertError(self.target.request(
            "PUT", f"/v1/nodes/{uuid}/states/provision",
            {"target": "inspect"}, version="1.5"), 406)
        response = self.target.set_provision(uuid, "inspect")
        self.assertEqual(202, response.status_code, response.text)
        inspected = self.target.wait_node(
            uuid, lambda n: n["provision_state"] == "manageable"
            and not n["target_provision_state"]
            and n["inspection_finished_at"] is not None,
            what="inspected")
        self.assertIsNone(inspected["inspection_started_at"])
        self.assertIsNone(inspected["last_error"])
        # Inspecting again moves the finish time forward.
        self.assertEqual(202, self.target.set_provision(
            uuid, "inspect").status_code)
        again = self.target.wait_node(
            uuid, lambda n: n["provision_state"] == "manageable"
            and n["inspection_finished_at"]
            != inspected["inspection_finished_at"], what="inspected again")
        self.assertGreater(again["inspection_finished_at"],
                           inspected["inspection_finished_at"])

    def test_configdrive_is_kept_masked_until_undeploy(self) -> None:
        _rc, (node, bare) = self.enroll(2)
        uuid = node["uuid"]
        self.target.expect(200, "PATCH", f"/v1/nodes/{uuid}", [
            {"op": "add", "path": "/instance_info/image_source",
             "value": "http://example.invalid/image.qcow2"}])
        response = self.target.set_provision(
            uuid, "active", configdrive="H4sICDr1dGUAA2NvbmZpZ2RyaXZl")
        self.assertEqual(202, response.status_code, response.text)
        active = self.target.wait_node(uuid, base.settled("active"))
        expected = {"image_source": "http://example.invalid/image.qcow2",
                    "image_type": "whole-disk", "configdrive": "******"}
        self.assertEqual(expected, active["instance_info"])
        only = self.target.expect(200, "GET", f"/v1/nodes/{uuid}",
                                  params={"fields": "instance_info"})
        self.assertEqual(expected, only["instance_info"])
        detail = self.target.expect(
            200, "GET", "/v1/nodes/detail",
            params={"resource_class": active["resource_class"]})
        self.assertEqual([expected], [n["instance_info"]
                                      for n in detail["nodes"]
                                      if n["uuid"] == uuid])
        # A config drive given as an object, and no image: kept alone.
        response = self.target.set_provision(
            bare["uuid"], "active",
            configdrive={"meta_data": {"hostname": "h"}, "user_data": "x"})
        self.assertEqual(202, response.status_code, response.text)
        self.assertEqual({"configdrive": "******"}, self.target.wait_node(
            bare["uuid"], base.settled("active"))["instance_info"])
        self.assertEqual({}, self.undeploy(uuid)["instance_info"])

    def test_configdrive_errors(self) -> None:
        _rc, (node,) = self.enroll(1)
        uuid = node["uuid"]
        path = f"/v1/nodes/{uuid}/states/provision"
        for body, version, fragment in (
            ({"target": "active", "configdrive": {"meta_data": {}}}, "1.55",
             "Providing a JSON object for configdrive is only supported "
             "starting with API version 1.56"),
            ({"target": "active", "configdrive": {"vendor_data": {}}},
             "1.58", "Providing vendor_data in configdrive is only "
                     "supported starting with API version 1.59"),
            ({"target": "active", "configdrive": {"bogus": 1}}, _V,
             "Invalid configdrive format"),
            ({"target": "manage", "configdrive": "abc"}, _V,
             "Adding a config drive is only supported when setting "
             "provision state to active, rebuild"),
        ):
            self.assertError(self.target.request(
                "PUT", path, body, version=version), 400, fragment)
        self.assertEqual({}, self.target.node(uuid)["instance_info"])
        self.assertEqual("available",
                         self.target.node(uuid)["provision_state"])


# The broker passes these routes through to Ironic unchanged: the
# Ironic target checks its answers.
globals().update(targets.per_target(InspectionContract, broker=False))
