"""The node API (list, show, create, patch, provision, power) through the
in-process server: the real application, workers and fake hardware."""

from __future__ import annotations

import uuid as uuidlib
from typing import Any, ClassVar

import testtools

from baremetal_allocclient.tests.fixtures import inprocess


def _rc() -> str:
    return "rc-" + uuidlib.uuid4().hex[:10]


class NodesApiTests(testtools.TestCase):
    server: ClassVar[inprocess.InProcessServer]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.server = inprocess.serve_for_class(cls, "--step-delay", "0.01")

    def create(self, **fields: Any) -> dict[str, Any]:
        body: dict[str, Any] = self.server.expect(
            201, "POST", "/v1/nodes",
            {"driver": "fake-hardware", "resource_class": _rc(), **fields})
        return body

    def error(self, status: int, method: str, path: str,
              json: Any = None, **kwargs: Any) -> str:
        response = self.server.request(method, path, json, **kwargs)
        self.assertEqual(status, response.status_code, response.text)
        body = response.json()
        self.assertIn("error_message", body)
        return str(response.text)

    # -- list and show ------------------------------------------------------

    def test_list_filters_on_resource_class(self) -> None:
        rc = _rc()
        made = {n["uuid"] for n in self.server.make_nodes(2, rc)}
        self.create()  # another resource class
        listed = self.server.expect(
            200, "GET", f"/v1/nodes?resource_class={rc}")["nodes"]
        self.assertEqual(made, {n["uuid"] for n in listed})

    def test_list_fields_returns_only_those_fields(self) -> None:
        node = self.create(name="fields-" + uuidlib.uuid4().hex[:6])
        listed = self.server.expect(
            200, "GET",
            f"/v1/nodes?resource_class={node['resource_class']}"
            f"&fields=uuid,name")["nodes"]
        self.assertEqual([{"uuid": node["uuid"], "name": node["name"]}],
                         [{k: v for k, v in n.items() if k != "links"}
                          for n in listed])

    def test_list_detail_and_fields_conflict(self) -> None:
        self.error(400, "GET", "/v1/nodes?detail=True&fields=uuid")

    def test_list_unknown_provision_state_is_refused(self) -> None:
        text = self.error(400, "GET", "/v1/nodes?provision_state=dancing")
        self.assertIn("dancing", text)

    def test_show_by_uuid_and_by_name(self) -> None:
        node = self.create(name="show-" + uuidlib.uuid4().hex[:6])
        by_uuid = self.server.expect(200, "GET", f"/v1/nodes/{node['uuid']}")
        by_name = self.server.expect(200, "GET", f"/v1/nodes/{node['name']}")
        self.assertEqual(node["uuid"], by_uuid["uuid"])
        self.assertEqual(by_uuid, by_name)
        self.assertEqual("enroll", by_uuid["provision_state"])

    def test_show_unknown_node_is_404(self) -> None:
        self.error(404, "GET", f"/v1/nodes/{uuidlib.uuid4()}")

    # -- create -------------------------------------------------------------

    def test_create_with_an_unknown_driver_is_refused(self) -> None:
        self.error(400, "POST", "/v1/nodes", {"driver": "no-such-driver"})

    def test_create_with_a_malformed_uuid_is_refused(self) -> None:
        text = self.error(400, "POST", "/v1/nodes",
                          {"driver": "fake-hardware", "uuid": "not-a-uuid"})
        self.assertIn("not-a-uuid", text)

    def test_create_with_a_taken_uuid_or_name_conflicts(self) -> None:
        node = self.create(name="taken-" + uuidlib.uuid4().hex[:6])
        self.error(409, "POST", "/v1/nodes",
                   {"driver": "fake-hardware", "uuid": node["uuid"]})
        self.error(409, "POST", "/v1/nodes",
                   {"driver": "fake-hardware", "name": node["name"]})

    # -- patch --------------------------------------------------------------

    def test_patch_adds_extra_and_replaces_name(self) -> None:
        node = self.create()
        name = "patched-" + uuidlib.uuid4().hex[:6]
        path = f"/v1/nodes/{node['uuid']}"
        patched = self.server.expect(200, "PATCH", path, [
            {"op": "add", "path": "/extra/colour", "value": "blue"},
            {"op": "replace", "path": "/name", "value": name},
        ])
        self.assertEqual({"colour": "blue"}, patched["extra"])
        self.assertEqual(name, patched["name"])
        shown = self.server.expect(200, "GET", f"/v1/nodes/{name}")
        self.assertEqual(node["uuid"], shown["uuid"])

    def test_patch_to_a_taken_name_conflicts(self) -> None:
        first = self.create(name="first-" + uuidlib.uuid4().hex[:6])
        second = self.create()
        self.error(409, "PATCH", f"/v1/nodes/{second['uuid']}", [
            {"op": "replace", "path": "/name", "value": first["name"]}])

    def test_patch_that_is_not_a_patch_is_refused(self) -> None:
        node = self.create()
        self.error(400, "PATCH", f"/v1/nodes/{node['uuid']}",
                   {"op": "add", "path": "/extra/x", "value": 1})

    # -- provision and power ------------------------------------------------

    def test_manage_and_provide_reach_available(self) -> None:
        node = self.create()
        for verb, state in (("manage", "manageable"),
                            ("provide", "available")):
            self.server.expect(
                202, "PUT", f"/v1/nodes/{node['uuid']}/states/provision",
                {"target": verb})
            settled = self.server.wait_node(node["uuid"], state)
        self.assertEqual("available", settled["provision_state"])
        states = self.server.expect(
            200, "GET", f"/v1/nodes/{node['uuid']}/states")
        self.assertEqual("available", states["provision_state"])

    def test_unknown_provision_target_is_refused(self) -> None:
        node = self.create()
        self.error(400, "PUT", f"/v1/nodes/{node['uuid']}/states/provision",
                   {"target": "dance"})

    def test_deploy_from_enroll_is_refused(self) -> None:
        node = self.create()
        self.error(400, "PUT", f"/v1/nodes/{node['uuid']}/states/provision",
                   {"target": "active"})
        shown = self.server.expect(200, "GET", f"/v1/nodes/{node['uuid']}")
        self.assertEqual("enroll", shown["provision_state"])

    def test_power_off_settles(self) -> None:
        (node,) = self.server.make_nodes(1, _rc())
        self.assertEqual("power off", node["power_state"])
        self.server.expect(
            202, "PUT", f"/v1/nodes/{node['uuid']}/states/power",
            {"target": "power on"})
        on = self.server.wait_node(node["uuid"], "available")
        self.assertEqual("power on", on["power_state"])
