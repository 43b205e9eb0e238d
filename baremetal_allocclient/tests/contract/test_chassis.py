"""Chassis, version-less paths and the ``.json`` suffix, on both targets.

What ironic-tempest-plugin's set-ups and allocation tests lean on
(issue 51): every test there creates a chassis and nodes in it, follows
a node's bookmark link (no ``/v1``) and deletes an allocation by
``<uuid>.json`` at API 1.90.
"""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.functional import targets

_V = "1.90"


class ChassisContract(base.ContractMixin):
    """Ironic's chassis resource and the paths clients follow."""

    def chassis(self, **body: Any) -> dict[str, Any]:
        """POST a chassis and insist on 201."""
        created: dict[str, Any] = self.target.expect(
            201, "POST", "/v1/chassis", body, version=_V)
        return created

    def node_in(self, chassis: str) -> dict[str, Any]:
        created: dict[str, Any] = self.target.expect(
            201, "POST", "/v1/nodes",
            {"driver": "fake-hardware", "name": targets.unique("node"),
             "chassis_uuid": chassis}, version=_V)
        return created

    def test_create_show_and_representation(self) -> None:
        created = self.chassis(description="rack 1", extra={"row": "a"})
        uuid = created["uuid"]
        self.assertEqual(
            ["created_at", "description", "extra", "links", "nodes",
             "updated_at", "uuid"], sorted(created))
        self.assertEqual("rack 1", created["description"])
        self.assertEqual({"row": "a"}, created["extra"])
        self.assertIsNone(created["updated_at"])
        self.assertEqual(["self", "bookmark"],
                         [link["rel"] for link in created["links"]])
        # Ironic's nodes: a list holding the list of links.
        self.assertEqual(1, len(created["nodes"]))
        self.assertTrue(created["nodes"][0][0]["href"].endswith(
            f"/v1/chassis/{uuid}/nodes"))
        self.assertTrue(created["nodes"][0][1]["href"].endswith(
            f"/chassis/{uuid}/nodes"))
        shown = self.target.expect(200, "GET", f"/v1/chassis/{uuid}",
                                   version=_V)
        self.assertEqual(created, shown)
        only = self.target.expect(200, "GET", f"/v1/chassis/{uuid}",
                                  params={"fields": "description"},
                                  version=_V)
        self.assertEqual(["description", "links"], sorted(only))
        given = str(uuidlib.uuid4())
        self.assertEqual(given, self.chassis(uuid=given)["uuid"])
        self.assertError(self.target.request(
            "POST", "/v1/chassis", {"uuid": given}, version=_V), 409,
            f"A chassis with UUID {given} already exists.")

    def test_bad_requests(self) -> None:
        missing = str(uuidlib.uuid4())
        self.assertError(self.target.request(
            "GET", f"/v1/chassis/{missing}", version=_V), 404,
            f"Chassis {missing} could not be found.")
        self.assertError(self.target.request(
            "DELETE", f"/v1/chassis/{missing}", version=_V), 404,
            f"Chassis {missing} could not be found.")
        self.assertError(self.target.request(
            "GET", "/v1/chassis/not-a-uuid", version=_V), 400,
            "Expected UUID for chassis_uuid: not-a-uuid")
        self.assertError(self.target.request(
            "POST", "/v1/chassis", {"description": "x" * 256},
            version=_V), 400)
        self.assertError(self.target.request(
            "POST", "/v1/chassis", {"name": "x"}, version=_V), 400)
        self.assertError(self.target.request(
            "POST", "/v1/nodes", {"driver": "fake-hardware",
                                  "chassis_uuid": missing}, version=_V),
            400, f"Chassis {missing} could not be found.")

    def test_list_detail_and_paging(self) -> None:
        made = [self.chassis(description=targets.unique("c"))
                for _ in range(3)]
        mine = {c["uuid"] for c in made}
        listed = self.target.expect(200, "GET", "/v1/chassis", version=_V)
        found = [c for c in listed["chassis"] if c["uuid"] in mine]
        self.assertEqual(3, len(found))
        self.assertEqual(["description", "links", "uuid"], sorted(found[0]))
        detail = self.target.expect(200, "GET", "/v1/chassis/detail",
                                    version=_V)
        self.assertIn("extra", detail["chassis"][0])
        self.assertIn("nodes", detail["chassis"][0])
        asked = self.target.expect(200, "GET", "/v1/chassis",
                                   params={"detail": "true"}, version=_V)
        self.assertIn("extra", asked["chassis"][0])
        page = self.target.expect(200, "GET", "/v1/chassis",
                                  params={"limit": "1"}, version=_V)
        self.assertEqual(1, len(page["chassis"]))
        self.assertIn("marker=", page["next"])
        self.assertError(self.target.request(
            "GET", "/v1/chassis", params={"sort_key": "extra"},
            version=_V), 400, "The sort_key value extra is an invalid "
            "field for sorting")

    def test_patch(self) -> None:
        created = self.chassis(description="old")
        path = f"/v1/chassis/{created['uuid']}"
        patched = self.target.expect(200, "PATCH", path, [
            {"op": "replace", "path": "/description", "value": "new"},
            {"op": "add", "path": "/extra/key", "value": "v"}], version=_V)
        self.assertEqual("new", patched["description"])
        self.assertEqual({"key": "v"}, patched["extra"])
        self.assertIsNotNone(patched["updated_at"])
        removed = self.target.expect(200, "PATCH", path, [
            {"op": "remove", "path": "/description"}], version=_V)
        self.assertIsNone(removed["description"])
        self.assertError(self.target.request("PATCH", path, [
            {"op": "replace", "path": "/foo", "value": 1}], version=_V),
            400, "Cannot patch /foo. Only the following can be updated: "
            "uuid, extra, description")
        self.assertError(self.target.request("PATCH", path, [
            {"op": "replace", "path": "/uuid",
             "value": str(uuidlib.uuid4())}], version=_V),
            400, "Cannot overwrite UUID for an existing Chassis.")

    def test_nodes_of_a_chassis_and_delete(self) -> None:
        chassis = self.chassis()
        other = self.chassis()
        node = self.node_in(chassis["uuid"])
        self.assertEqual(chassis["uuid"], node["chassis_uuid"])
        listed = self.target.expect(
            200, "GET", f"/v1/chassis/{chassis['uuid']}/nodes", version=_V)
        self.assertEqual([node["uuid"]],
                         [n["uuid"] for n in listed["nodes"]])
        detail = self.target.expect(
            200, "GET", f"/v1/chassis/{chassis['uuid']}/nodes/detail",
            version=_V)
        self.assertEqual(chassis["uuid"], detail["nodes"][0]["chassis_uuid"])
        filtered = self.target.expect(
            200, "GET", "/v1/nodes", params={"chassis_uuid": other["uuid"]},
            version=_V)
        self.assertEqual([], filtered["nodes"])
        missing = str(uuidlib.uuid4())
        self.assertError(self.target.request(
            "GET", f"/v1/chassis/{missing}/nodes", version=_V), 404,
            f"Chassis {missing} could not be found.")
        self.assertError(self.target.request(
            "DELETE", f"/v1/chassis/{chassis['uuid']}", version=_V), 400,
            f"chassis {chassis['uuid']} contains nodes")
        moved = self.target.expect(200, "PATCH", f"/v1/nodes/{node['uuid']}",
                                   [{"op": "replace", "path": "/chassis_uuid",
                                     "value": other["uuid"]}], version=_V)
        self.assertEqual(other["uuid"], moved["chassis_uuid"])
        self.assertError(self.target.request(
            "PATCH", f"/v1/nodes/{node['uuid']}",
            [{"op": "replace", "path": "/chassis_uuid", "value": missing}],
            version=_V), 400, f"Chassis {missing} could not be found.")
        self.assertError(self.target.request(
            "PATCH", f"/v1/nodes/{node['uuid']}",
            [{"op": "remove", "path": "/chassis_uuid"}], version="1.24"),
            406)
        self.target.expect(204, "DELETE", f"/v1/chassis/{chassis['uuid']}",
                           version=_V)
        cleared = self.target.expect(
            200, "PATCH", f"/v1/nodes/{node['uuid']}",
            [{"op": "remove", "path": "/chassis_uuid"}], version=_V)
        self.assertIsNone(cleared["chassis_uuid"])
        self.target.expect(204, "DELETE", f"/v1/chassis/{other['uuid']}",
                           version=_V)

    def test_version_less_paths_and_bookmarks(self) -> None:
        chassis = self.chassis()
        node = self.node_in(chassis["uuid"])
        v1 = self.target.expect(200, "GET", "/v1", version=_V)
        advertised = [link for key in ("chassis", "nodes", "ports",
                                       "allocations")
                      for link in v1[key] if link["rel"] == "bookmark"]
        for link in (*advertised, node["links"][1], chassis["links"][1],
                     chassis["nodes"][0][1]):
            href = link["href"]
            path = href[href.index("/", len("http://")):]
            self.assertFalse(path.startswith("/v1/"), href)
            response = self.target.request("GET", path, version=_V)
            self.assertEqual(200, response.status_code,
                             f"{href}: {response.text[:500]}")
        self.assertError(self.target.request(
            "GET", f"/nodes/{node['uuid']}/allocation", version=_V), 404,
            f"Allocation for node {node['uuid']} was not found")
        self.assertError(self.target.request(
            "GET", f"/v2/nodes/{node['uuid']}", version=_V), 404)

    def test_json_suffix_by_version(self) -> None:
        rc, nodes = self.enroll(1)
        del nodes
        allocation = self.post_allocation(
            {"resource_class": rc, "name": targets.unique("alloc")},
            version=_V)
        chassis = self.chassis()
        shown = self.target.expect(
            200, "GET", f"/v1/chassis/{chassis['uuid']}.json", version=_V)
        self.assertEqual(chassis["uuid"], shown["uuid"])
        path = f"/v1/allocations/{allocation['uuid']}.json"
        self.assertError(self.target.request("GET", path, version="1.91"),
                         404, "could not be found")
        # Without a version header the suffix stays too.
        self.assertError(self.target.request(
            "GET", f"/v1/chassis/{chassis['uuid']}.json", version=None),
            400, f"Expected UUID for chassis_uuid: {chassis['uuid']}.json")
        self.target.wait_allocation(allocation["uuid"])
        self.target.expect(204, "DELETE", path, version=_V)
        self.assertError(self.target.request(
            "GET", f"/v1/allocations/{allocation['uuid']}", version=_V),
            404, "could not be found")


# The broker passes these routes through to Ironic unchanged: the
# Ironic target checks its answers.
globals().update(targets.per_target(ChassisContract, broker=False))
