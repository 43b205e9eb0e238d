"""Real openstacksdk (in process) against both targets.

openstacksdk is configured the way a standalone Ironic user configures it:
``auth_type: none`` with both ``auth.endpoint`` and
``baremetal_endpoint_override`` set.  Its 409 retries are off (see
``Target.connection``) so conflicts fail fast.
"""

from __future__ import annotations

from typing import Any

from openstack import exceptions as sdk_exc

from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.functional import targets


class OpenStackSdk(base.ContractMixin):
    """``conn.baremetal`` node and allocation calls."""

    conn: Any

    def setUp(self) -> None:
        super().setUp()
        self.conn = self.sdk_connection()

    def test_node_enrollment_and_allocation_lifecycle(self) -> None:
        """create/manage/provide/power off, allocate, update, deploy."""
        bm = self.conn.baremetal
        rc = targets.unique("rc")
        node = bm.create_node(driver="fake-hardware", resource_class=rc,
                              name=targets.unique("node"))
        self.assertEqual("enroll", node.provision_state)
        bm.set_node_traits(node, ["CUSTOM_SDK"])
        bm.set_node_provision_state(node, "manage", wait=True, timeout=60)
        bm.set_node_provision_state(node, "provide", wait=True, timeout=60)
        bm.set_node_power_state(node, "power off", wait=True, timeout=60)
        node = bm.get_node(node.id)
        self.assertEqual(("available", "power off"),
                         (node.provision_state, node.power_state))
        self.assertEqual(["CUSTOM_SDK"], node.traits)

        name = targets.unique("alloc")
        alloc = bm.create_allocation(resource_class=rc, traits=["CUSTOM_SDK"],
                                     name=name, extra={"a": "b"})
        self.assertEqual("allocating", alloc.state)
        alloc = bm.wait_for_allocation(alloc, timeout=60)
        self.assertEqual("active", alloc.state)
        self.assertEqual(node.id, alloc.node_id)
        self.assertEqual(["CUSTOM_SDK"], alloc.traits)
        self.assertEqual({"a": "b"}, alloc.extra)
        self.assertEqual(alloc.id, bm.get_allocation(name).id)
        node = bm.get_node(node.id)
        self.assertEqual(alloc.id, node.allocation_id)
        self.assertEqual(alloc.id, node.instance_id)

        def ids(**query: Any) -> list[str]:
            return [a.id for a in bm.allocations(**query)]

        self.assertEqual([alloc.id], ids(resource_class=rc))
        self.assertEqual([alloc.id], ids(resource_class=rc, state="active"))
        self.assertEqual([], ids(resource_class=rc, state="error"))
        self.assertEqual([alloc.id], ids(node=node.name))
        self.assertEqual([alloc.id], ids(node=node.id))
        trimmed = list(bm.allocations(resource_class=rc,
                                      fields=["uuid", "name"]))
        self.assertEqual([name], [a.name for a in trimmed])
        self.assertEqual(None, trimmed[0].state)

        renamed = targets.unique("alloc")
        updated = bm.update_allocation(alloc, name=renamed,
                                       extra={"c": "d"})
        self.assertEqual((renamed, {"c": "d"}),
                         (updated.name, updated.extra))
        patched = bm.patch_allocation(alloc, [
            {"op": "add", "path": "/extra/e", "value": "f"}])
        self.assertEqual({"c": "d", "e": "f"}, patched.extra)

        bm.set_node_provision_state(node, "active", wait=True, timeout=60)
        with self.assertRaises(sdk_exc.ConflictException) as ctx:
            bm.delete_allocation(alloc)
        self.assertIn("because the node is active", str(ctx.exception))
        bm.set_node_provision_state(node, "deleted", wait=True, timeout=60)
        node = bm.get_node(node.id)
        self.assertEqual((None, None), (node.allocation_id, node.instance_id))
        with self.assertRaises(sdk_exc.NotFoundException):
            bm.get_allocation(alloc.id)

    def test_errors(self) -> None:
        """Failure, conflict and not-found surface as SDK exceptions."""
        bm = self.conn.baremetal
        rc, (node,) = self.enroll(1)
        failed = bm.create_allocation(resource_class=targets.unique("rc"))
        with self.assertRaises(sdk_exc.ResourceFailure) as ctx:
            bm.wait_for_allocation(failed, timeout=60)
        self.assertIn("no available nodes match the resource class",
                      str(ctx.exception))
        self.assertIn("no available nodes match the resource class",
                      bm.get_allocation(failed.id).last_error)
        name = targets.unique("alloc")
        bm.create_allocation(resource_class=rc, name=name)
        with self.assertRaises(sdk_exc.ConflictException) as conflict:
            bm.create_allocation(resource_class=rc, name=name)
        self.assertIn(f"An allocation with name {name} already exists.",
                      str(conflict.exception))
        # Settled before the deletes below: Ironic on SQLite answered a
        # delete that raced its conductor's reservation of this one with
        # a 500 ("database is locked", seen in CI).
        bm.wait_for_allocation(name, timeout=60)
        missing = targets.unique("nope")
        with self.assertRaises(sdk_exc.NotFoundException) as not_found:
            bm.get_allocation(missing)
        self.assertIn(f"Allocation {missing} could not be found.",
                      str(not_found.exception))
        with self.assertRaises(sdk_exc.BadRequestException):
            bm.create_allocation(resource_class=rc, traits=["not a trait"])
        self.assertEqual(None, bm.delete_allocation(missing,
                                                    ignore_missing=True))
        bm.delete_allocation(failed)
        with self.assertRaises(sdk_exc.NotFoundException):
            bm.delete_allocation(failed, ignore_missing=False)
        bm.delete_allocation(name)
        self.assertReleased(node["uuid"], name)

    def test_owner_and_backfill(self) -> None:
        """owner (1.60) and backfill with ``node`` (1.58) via the SDK."""
        bm = self.conn.baremetal
        rc, nodes = self.enroll(2, owner="sdk-owner")
        owned = bm.wait_for_allocation(bm.create_allocation(
            resource_class=rc, owner="sdk-owner",
            candidate_nodes=[nodes[0]["name"]]), timeout=60)
        self.assertEqual(("active", "sdk-owner", nodes[0]["uuid"]),
                         (owned.state, owned.owner, owned.node_id))
        self.assertEqual([owned.id], [a.id for a in bm.allocations(
            owner="sdk-owner", resource_class=rc)])
        self.deploy(nodes[1]["uuid"])
        backfilled = bm.create_allocation(node=nodes[1]["uuid"])
        self.assertEqual(("active", nodes[1]["uuid"], rc),
                         (backfilled.state, backfilled.node_id,
                          backfilled.resource_class))
        self.undeploy(nodes[1]["uuid"])
        with self.assertRaises(sdk_exc.NotFoundException):
            bm.get_allocation(backfilled.id)


globals().update(targets.per_target(OpenStackSdk))
