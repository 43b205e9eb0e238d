"""The Placement sync and reconciliation against an in-memory Placement
and a real SQLite database."""

from __future__ import annotations

from unittest import mock

import testtools
from sqlalchemy import delete, update

from baremetal_allocclient.server.allocation.placement import client as pc
from baremetal_allocclient.server.allocation.placement.model import (
    MANAGED_TRAIT,
)
from baremetal_allocclient.server.allocation.placement.sync import (
    PlacementSync,
)
from baremetal_allocclient.server.db.models import (
    Allocation,
    Node,
    NodeTrait,
)
from baremetal_allocclient.tests.unit.server._placement_fake import (
    FakePlacement,
)
from baremetal_allocclient.tests.unit.server._sqlite import SQLiteDatabase

RC = "CUSTOM_GOLD"


class SyncCase(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.db = self.useFixture(SQLiteDatabase()).db
        self.placement = FakePlacement()
        self.clock = [0.0]
        self.sync = PlacementSync(
            self.db, self.placement, "proj", "user",
            reconcile_interval=100, clock=lambda: self.clock[0],
        )

    def add_node(self, uuid: str, **values: object) -> int:
        fields: dict[str, object] = {
            "uuid": uuid, "name": f"name-{uuid}", "driver": "fake-hardware",
            "resource_class": "gold", "provision_state": "available",
            "power_state": "power off", "maintenance": False,
        }
        fields.update(values)
        with self.db.write() as session:
            node = Node(**fields)
            session.add(node)
            session.flush()
            return node.id

    def update_node(self, uuid: str, **values: object) -> None:
        with self.db.write() as session:
            session.execute(update(Node).where(Node.uuid == uuid)
                            .values(**values))

    def allocate(self, node_id: int, uuid: str, state: str = "active"
                 ) -> None:
        with self.db.write() as session:
            alloc = Allocation(uuid=uuid, state=state, resource_class="gold",
                               node_id=node_id if state == "active" else None)
            session.add(alloc)
            session.flush()
            if state == "active":
                session.execute(update(Node).where(Node.id == node_id).values(
                    allocation_id=alloc.id, instance_uuid=uuid))

    def reserved(self, uuid: str) -> int:
        return int(self.placement.providers_[uuid].inventories[RC]["reserved"])


class IncrementalTests(SyncCase):
    def test_first_round_reconciles_and_creates_providers(self) -> None:
        node_id = self.add_node("n1")
        with self.db.write() as session:
            session.add(NodeTrait(node_id=node_id, trait="CUSTOM_FAST"))
        self.sync.run_once()
        self.assertEqual(1, self.sync.reconciliations)
        provider = self.placement.providers_["n1"]
        self.assertEqual("name-n1", provider.name)
        self.assertEqual({"CUSTOM_FAST", MANAGED_TRAIT}, provider.traits)
        self.assertEqual(0, self.reserved("n1"))
        self.assertIn(("trait", "CUSTOM_FAST"), self.placement.calls)
        self.assertIn(("rc", RC), self.placement.calls)

    def test_only_changes_are_pushed(self) -> None:
        self.add_node("n1")
        self.add_node("n2")
        self.sync.run_once()
        self.placement.calls.clear()
        self.sync.run_once()
        self.assertEqual([], self.placement.calls)  # nothing changed
        self.update_node("n1", maintenance=True)
        self.sync.run_once()
        self.assertEqual(1, self.reserved("n1"))
        self.assertEqual(0, self.reserved("n2"))
        touched = {arg for _name, arg in self.placement.calls}
        self.assertNotIn("n2", touched)
        self.update_node("n1", maintenance=False)
        self.sync.run_once()
        self.assertEqual(0, self.reserved("n1"))

    def test_deleted_allocation_and_node_leave_placement(self) -> None:
        node_id = self.add_node("n1")
        self.sync.run_once()
        self.allocate(node_id, "a1")
        self.sync.run_once()  # the claim of an allocation made elsewhere
        self.assertEqual({"n1": {RC: 1}}, self.placement.consumers["a1"])
        with self.db.write() as session:
            session.execute(update(Node).values(allocation_id=None,
                                                instance_uuid=None))
            session.execute(delete(Allocation))
        self.sync.run_once()
        self.assertNotIn("a1", self.placement.consumers)
        with self.db.write() as session:
            session.execute(delete(Node))
        self.sync.run_once()
        self.assertEqual({}, self.placement.providers_)

    def test_unreachable_then_full_reconciliation(self) -> None:
        self.add_node("n1")
        self.sync.run_once()
        self.placement.down = True
        self.update_node("n1", maintenance=True)
        self.sync.run_once()
        self.assertIn("connection refused", self.sync.last_error or "")
        self.placement.down = False
        self.sync.run_once()
        self.assertEqual(2, self.sync.reconciliations)
        self.assertEqual(1, self.reserved("n1"))
        self.assertIsNone(self.sync.last_error)


class ReconcileTests(SyncCase):
    def test_drift_is_repaired(self) -> None:
        n1 = self.add_node("n1")
        self.add_node("n2")
        self.allocate(n1, "a1")
        self.sync.run_once()
        # Drift: wrong reserved, traits wiped, a stale and a missing claim,
        # a provider of a node that no longer exists.
        self.placement.providers_["n2"].inventories[RC]["reserved"] = 1
        self.placement.providers_["n2"].traits = set()
        del self.placement.consumers["a1"]
        self.placement.consumers["stale"] = {"n2": {RC: 1}}
        self.placement.create_provider("gone", "gone")
        # Another service's claim on one of our nodes is not ours to drop.
        self.add_node("n3")
        self.sync.run_once()
        self.placement.consumers["nova-instance"] = {"n3": {RC: 1}}
        self.placement.users["nova-instance"] = "nova"
        self.placement.providers_["gone"].traits = {MANAGED_TRAIT}
        self.placement.create_provider("foreign", "nova-node")
        self.clock[0] = 1000  # the periodic reconciliation is due
        self.sync.run_once()
        self.assertEqual(0, self.reserved("n2"))
        self.assertIn(MANAGED_TRAIT, self.placement.providers_["n2"].traits)
        self.assertEqual({"n1": {RC: 1}}, self.placement.consumers["a1"])
        self.assertNotIn("stale", self.placement.consumers)
        self.assertEqual({"n3": {RC: 1}},
                         self.placement.consumers["nova-instance"])
        self.assertNotIn("gone", self.placement.providers_)
        self.assertIn("foreign", self.placement.providers_)  # not ours

    def test_claim_of_an_allocating_allocation_is_left_alone(self) -> None:
        self.add_node("n1")
        self.allocate(0, "in-flight", state="allocating")
        self.sync.run_once()
        self.placement.consumers["in-flight"] = {"n1": {RC: 1}}
        self.clock[0] = 1000
        self.sync.run_once()
        self.assertIn("in-flight", self.placement.consumers)


    def test_claim_of_an_allocation_finished_during_the_round_stays(
            self) -> None:
        """A worker that claims and books a node while a reconciliation
        runs: the claim is not in the round's first database read, but the
        allocation is active by the time the round looks at it again."""
        node_id = self.add_node("n1")
        self.sync.run_once()
        self.clock[0] = 1000
        real = self.placement.provider_consumers

        def worker_finishes_meanwhile(uuid: str) -> set[str]:
            if "racer" not in self.placement.consumers:
                self.placement.consumers["racer"] = {"n1": {RC: 1}}
                self.allocate(node_id, "racer")
            return real(uuid)

        with mock.patch.object(self.placement, "provider_consumers",
                               side_effect=worker_finishes_meanwhile):
            self.sync.run_once()
        self.assertIn("racer", self.placement.consumers)


class FailureTests(SyncCase):
    def test_refused_push_is_retried_and_logged_once(self) -> None:
        self.add_node("n1")
        refused = pc.PlacementError("PUT", "/traits", 400, pc.UNDEFINED,
                                    "bad trait")
        with mock.patch.object(self.placement, "set_traits",
                               side_effect=refused) as put:
            with self.assertLogs(
                    "baremetal_allocclient.server.allocation.placement",
                    "DEBUG") as logs:
                self.sync.run_once()
                self.sync.run_once()
            self.assertEqual(2, put.call_count)  # retried next round
        levels = [r.levelname for r in logs.records
                  if "Could not update" in r.getMessage()]
        self.assertEqual(["ERROR", "DEBUG"], levels)
        self.sync.run_once()  # accepted now
        self.assertIn(MANAGED_TRAIT, self.placement.providers_["n1"].traits)
