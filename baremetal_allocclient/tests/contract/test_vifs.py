"""VIFs (API 1.28): attach, list, detach and release on undeploy.

Fake-hardware nodes use the ``noop`` network interface.  In Ironic it
stores nothing: the list stays empty, a second attach and the detach of
an unknown VIF succeed.  The reference server stores the VIFs per node
(the list shows them, a duplicate is a 409, an unknown detach a 400, as
Ironic's storing network interfaces answer); each test asserts both.
"""

from __future__ import annotations

import uuid
from typing import Any

from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.functional import targets

_V = "1.73"


class VifContract(base.ContractMixin):
    """The VIF sub-resource of nodes."""

    def vifs(self, node: str) -> list[str]:
        body: dict[str, Any] = self.target.expect(
            200, "GET", f"/v1/nodes/{node}/vifs", version=_V)
        return [vif["id"] for vif in body["vifs"]]

    def attach(self, node: str, vif: str, **extra: Any) -> Any:
        return self.target.request("POST", f"/v1/nodes/{node}/vifs",
                                   {"id": vif, **extra}, version=_V)

    def test_attach_list_detach(self) -> None:
        node = self.target.expect(
            201, "POST", "/v1/nodes", {"driver": "fake-hardware"})["uuid"]
        first, second = str(uuid.uuid4()), targets.unique("vif")
        self.assertEqual(204, self.attach(node, first).status_code)
        self.assertEqual(204, self.attach(node, second, extra=1).status_code)
        again = self.attach(node, first)
        if self.is_reference:
            self.assertEqual([first, second], self.vifs(node))
            self.assertError(again, 409, f"VIF {first} is already attached")
        else:
            self.assertEqual([], self.vifs(node))  # noop stores nothing
            self.assertEqual(204, again.status_code)
        self.target.expect(204, "DELETE", f"/v1/nodes/{node}/vifs/{first}",
                           version=_V)
        unknown = self.target.request(
            "DELETE", f"/v1/nodes/{node}/vifs/{first}", version=_V)
        if self.is_reference:
            self.assertEqual([second], self.vifs(node))
            self.assertError(unknown, 400, f"Unable to detach VIF {first}")
        else:
            self.assertEqual(204, unknown.status_code)

    def test_errors_and_version_gate(self) -> None:
        node = self.target.expect(
            201, "POST", "/v1/nodes", {"driver": "fake-hardware"})["uuid"]
        self.assertError(self.target.request(
            "GET", f"/v1/nodes/{node}/vifs", version="1.27"), 404)
        self.assertError(self.target.request(
            "POST", f"/v1/nodes/{node}/vifs", {}, version=_V), 400,
            "Schema error for vif: 'id' is a required property")
        self.assertError(self.attach(node, "not valid!"), 400,
                         "Expected UUID or name for id: not valid!")
        self.assertError(self.attach(node, "a", port_uuid="x",
                                     portgroup_uuid="y"), 400,
                         "Cannot specify both port_uuid and portgroup_uuid")
        missing = "5c9dcd04-2073-49bc-9618-99ae634d8971"
        for method, path, body in (
            ("GET", f"/v1/nodes/{missing}/vifs", None),
            ("POST", f"/v1/nodes/{missing}/vifs", {"id": "a"}),
            ("DELETE", f"/v1/nodes/{missing}/vifs/a", None),
        ):
            self.assertError(self.target.request(
                method, path, body, version=_V), 404,
                f"Node {missing} could not be found.")

    def test_undeploy_detaches_the_vifs(self) -> None:
        _rc, (node, other) = self.enroll(2)
        vif = str(uuid.uuid4())
        self.deploy(node["uuid"])
        self.assertEqual(204, self.attach(node["uuid"], vif).status_code)
        self.assertEqual(204, self.attach(other["uuid"], vif).status_code)
        if self.is_reference:
            self.assertEqual([vif], self.vifs(node["uuid"]))
        self.undeploy(node["uuid"])
        self.assertEqual([], self.vifs(node["uuid"]))
        if self.is_reference:  # only the torn down node lost it
            self.assertEqual([vif], self.vifs(other["uuid"]))
        # A node with VIFs attached can be deleted.
        self.target.expect(204, "DELETE", f"/v1/nodes/{other['uuid']}")


# The broker passes these routes through to Ironic unchanged: the
# Ironic target checks its answers.
globals().update(targets.per_target(VifContract, broker=False))
