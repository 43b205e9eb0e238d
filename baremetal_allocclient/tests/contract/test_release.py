"""Releasing nodes: deploy, undeploy, node PATCH and node DELETE.

The release rules of the Allocation API spec, pinned on both targets:
an allocation cannot be removed under an ``active`` node (unless it is in
maintenance), tearing a node down deletes its allocation, unsetting
``instance_uuid`` deletes the allocation, and deleting a node in maintenance
deletes its allocation.
"""

from __future__ import annotations

import uuid as uuidlib

from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.functional import targets


class Release(base.ContractMixin):
    """How allocations are released by node operations."""

    def test_deploy_keeps_and_undeploy_deletes_the_allocation(self) -> None:
        """The allocation survives deploy and is deleted by undeploy."""
        rc, _ = self.enroll(1)
        done = self.allocate({"resource_class": rc})
        node = self.deploy(done["node_uuid"])
        self.assertEqual(done["uuid"], node["instance_uuid"])
        self.assertEqual(done["uuid"], node["allocation_uuid"])
        self.assertEqual("active", self.target.allocation(done["uuid"])
                         ["state"])
        self.undeploy(done["node_uuid"])
        self.assertReleased(done["node_uuid"], done["uuid"])
        # The node can be allocated again.
        again = self.allocate({"resource_class": rc})
        self.assertEqual(done["node_uuid"], again["node_uuid"])

    def test_no_release_under_an_active_node(self) -> None:
        """DELETE, node-allocation DELETE, PATCH and node DELETE are 409."""
        rc, _ = self.enroll(1)
        done = self.allocate({"resource_class": rc})
        node = done["node_uuid"]
        self.deploy(node)
        expected = (f"Cannot remove allocation {done['uuid']} for node "
                    f"{node}, because the node is active (and maintenance "
                    "mode is off)")
        self.assertError(self.target.request(
            "DELETE", f"/v1/allocations/{done['uuid']}"), 409, expected)
        self.assertError(self.target.request(
            "DELETE", f"/v1/nodes/{node}/allocation"), 409, expected)
        self.assertError(self.target.request(
            "PATCH", f"/v1/nodes/{node}",
            [{"op": "remove", "path": "/instance_uuid"}]), 409,
            f"Node {node} with an allocation can not have instance_uuid "
            "removed", "Current state is 'active'")
        self.assertError(self.target.request("DELETE", f"/v1/nodes/{node}"),
                         409, f"Node {node} is associated with instance "
                         f"{done['uuid']}")
        self.assertReserved(self.target.allocation(done["uuid"]))
        self.undeploy(node)

    def test_maintenance_allows_release_of_an_active_node(self) -> None:
        """In maintenance, the allocation of an active node can go."""
        rc, _ = self.enroll(1)
        done = self.allocate({"resource_class": rc})
        node = done["node_uuid"]
        self.deploy(node)
        self.maintenance(node, True)
        self.target.expect(204, "DELETE", f"/v1/allocations/{done['uuid']}")
        self.assertReleased(node, done["uuid"])
        self.assertEqual("active", self.target.node(node)["provision_state"])
        self.maintenance(node, False)

    def test_patch_removing_instance_uuid_deletes_allocation(self) -> None:
        """On an available node, unsetting instance_uuid releases it."""
        rc, _ = self.enroll(1)
        done = self.allocate({"resource_class": rc})
        node = self.target.expect(
            200, "PATCH", f"/v1/nodes/{done['node_uuid']}",
            [{"op": "remove", "path": "/instance_uuid"}])
        self.assertEqual(None, node["instance_uuid"])
        self.assertEqual(None, node["allocation_uuid"])
        self.assertReleased(done["node_uuid"], done["uuid"])

    def test_another_instance_uuid_is_refused_as_node_associated(
            self) -> None:
        """Setting another ``instance_uuid`` on a node that has one is
        Ironic's 409 "Node ... is associated with instance ...", whether
        an allocation set it or a PATCH did; the same one is no change."""
        rc, _ = self.enroll(1)
        done = self.allocate({"resource_class": rc})
        node = done["node_uuid"]
        other = str(uuidlib.uuid4())
        self.assertError(self.target.request(
            "PATCH", f"/v1/nodes/{node}",
            [{"op": "replace", "path": "/instance_uuid", "value": other}]),
            409, f"Node {node} is associated with instance {done['uuid']}.")
        self.assertReserved(self.target.allocation(done["uuid"]))
        _, (plain,) = self.enroll(1)
        first = str(uuidlib.uuid4())
        self.target.expect(200, "PATCH", f"/v1/nodes/{plain['uuid']}", [
            {"op": "add", "path": "/instance_uuid", "value": first}])
        self.assertError(self.target.request(
            "PATCH", f"/v1/nodes/{plain['uuid']}",
            [{"op": "replace", "path": "/instance_uuid", "value": other}]),
            409, f"Node {plain['uuid']} is associated with instance {first}.")
        same = self.target.expect(200, "PATCH", f"/v1/nodes/{plain['uuid']}", [
            {"op": "replace", "path": "/instance_uuid", "value": first}])
        self.assertEqual(first, same["instance_uuid"])
        self.target.expect(200, "PATCH", f"/v1/nodes/{plain['uuid']}", [
            {"op": "remove", "path": "/instance_uuid"}])

    def test_allocation_uuid_is_read_only(self) -> None:
        """PATCH of /allocation_uuid is a 400 naming the field."""
        rc, _ = self.enroll(1)
        done = self.allocate({"resource_class": rc})
        response = self.target.request(
            "PATCH", f"/v1/nodes/{done['node_uuid']}",
            [{"op": "replace", "path": "/allocation_uuid",
              "value": str(uuidlib.uuid4())}])
        self.assertError(response, 400, "Cannot patch /allocation_uuid")
        self.assertReserved(self.target.allocation(done["uuid"]))

    def test_deleting_a_node_in_maintenance_deletes_allocation(self) -> None:
        """Node DELETE: 409 while associated, 204 in maintenance."""
        rc, _ = self.enroll(1)
        done = self.allocate({"resource_class": rc})
        node = done["node_uuid"]
        self.assertError(self.target.request("DELETE", f"/v1/nodes/{node}"),
                         409, f"Node {node} is associated with instance "
                         f"{done['uuid']}")
        self.maintenance(node, True)
        self.target.expect(204, "DELETE", f"/v1/nodes/{node}")
        self.assertEqual(404, self.target.request(
            "GET", f"/v1/nodes/{node}").status_code)
        self.assertError(self.target.request(
            "GET", f"/v1/allocations/{done['uuid']}"), 404,
            "could not be found")


class Backfill(base.ContractMixin):
    """Backfilling an allocation for an already deployed node (1.58)."""

    def test_backfill_of_an_active_node(self) -> None:
        """201 straight to ``active``, taking the node's resource class."""
        rc, (node,) = self.enroll(1)
        self.deploy(node["uuid"])
        name = targets.unique("backfill")
        created = self.post_allocation({"node": node["name"], "name": name})
        self.assertEqual("active", created["state"])
        self.assertEqual(node["uuid"], created["node_uuid"])
        self.assertEqual(rc, created["resource_class"])
        self.assertEqual(name, created["name"])
        self.assertReserved(created)
        self.assertError(self.target.request(
            "POST", "/v1/allocations", {"node": node["uuid"]}), 409,
            "already exists")
        self.assertError(self.target.request(
            "DELETE", f"/v1/allocations/{name}"), 409,
            "because the node is active")
        self.undeploy(node["uuid"])
        self.assertReleased(node["uuid"], created["uuid"])

    def test_backfill_with_matching_resource_class_and_traits(self) -> None:
        """Matching resource class and traits are accepted."""
        rc, (node,) = self.enroll(1, traits=["CUSTOM_T"])
        self.deploy(node["uuid"])
        created = self.post_allocation({"node": node["uuid"],
                                        "resource_class": rc,
                                        "traits": ["CUSTOM_T"]})
        self.assertEqual("active", created["state"])
        self.assertEqual(["CUSTOM_T"], created["traits"])
        self.assertReserved(created)
        self.undeploy(node["uuid"])

    def test_backfill_of_an_unknown_node_is_400(self) -> None:
        """The node must exist."""
        missing = targets.unique("nope")
        self.assertError(self.target.request(
            "POST", "/v1/allocations", {"node": missing}), 400,
            f"Node {missing} could not be found.")


globals().update(targets.per_target(Release))
globals().update(targets.per_target(Backfill))
