"""The Placement backend's claim logic against an in-memory Placement and
a real SQLite database: conflicts, rollback of claims, outages."""

from __future__ import annotations

import random
from unittest import mock

import testtools
from sqlalchemy import delete, select, update

from baremetal_allocclient.server.allocation import selection
from baremetal_allocclient.server.allocation.backends import (
    placement as backend_mod,
)
from baremetal_allocclient.server.allocation.backends.base import Job, Settled
from baremetal_allocclient.server.allocation.backends.placement import (
    PlacementBackend,
)
from baremetal_allocclient.server.allocation.placement import client as pc
from baremetal_allocclient.server.allocation.placement.sync import (
    PlacementSync,
)
from baremetal_allocclient.server.db.models import Allocation, Node
from baremetal_allocclient.tests.unit.server._placement_fake import (
    FakePlacement,
)
from baremetal_allocclient.tests.unit.server._sqlite import SQLiteDatabase

RC = "CUSTOM_GOLD"


class BackendCase(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.db = self.useFixture(SQLiteDatabase()).db
        self.placement = FakePlacement()
        self.sync = PlacementSync(self.db, self.placement, "proj", "user")
        self.backend = PlacementBackend(
            self.db, self.placement, self.sync, "proj", "user", wait=0.2,
            rng=random.Random(4),
        )
        self.nodes = {}
        for name in ("n1", "n2"):
            with self.db.write() as session:
                node = Node(uuid=name, name=name, driver="fake-hardware",
                            resource_class="gold",
                            provision_state="available",
                            power_state="power off", maintenance=False)
                session.add(node)
                session.flush()
                self.nodes[name] = node.id
        self.sync.run_once()

    def job(self, uuid: str = "a1", **request: object) -> Job:
        with self.db.write() as session:
            alloc = Allocation(uuid=uuid, state="allocating",
                               resource_class="gold",
                               conductor_affinity="c1")
            session.add(alloc)
            session.flush()
            alloc_id = alloc.id
        req = selection.Request("gold", **request)  # type: ignore[arg-type]
        return Job(alloc_id, uuid, req,
                   tuple(selection.active_filters(req)), "c1")

    def allocation(self, uuid: str) -> Allocation:
        with self.db.read() as session:
            alloc = session.scalars(
                select(Allocation).where(Allocation.uuid == uuid)).one()
            session.expunge(alloc)
            return alloc

    def node_of(self, uuid: str) -> str | None:
        with self.db.read() as session:
            return session.scalar(
                select(Node.uuid).join(
                    Allocation, Allocation.node_id == Node.id
                ).where(Allocation.uuid == uuid))


class AllocateTests(BackendCase):
    def test_claims_in_placement_then_in_the_database(self) -> None:
        report = self.backend.allocate(self.job(traits=()))
        alloc = self.allocation("a1")
        self.assertEqual("active", alloc.state, alloc.last_error)
        node = self.node_of("a1")
        self.assertEqual(Settled("active", node, None, alloc.updated_at),
                         report)
        self.assertEqual({node: {RC: 1}}, self.placement.consumers["a1"])
        self.assertIn(("claim", ("a1", node, "proj")), self.placement.calls)

    def test_candidates_are_asked_with_in_tree(self) -> None:
        self.backend.allocate(self.job(candidate_nodes=("n2",)))
        self.assertEqual("n2", self.node_of("a1"))
        self.assertIn(("candidates", (RC, (), "n2")), self.placement.calls)
        self.assertNotIn(("candidates", (RC, (), "n1")),
                         self.placement.calls)

    def test_capacity_conflict_moves_to_the_next_node(self) -> None:
        self.placement.claim_errors = [
            pc.PlacementError("PUT", "/a", 409, pc.UNDEFINED, "no room")
        ]
        self.backend.allocate(self.job())
        self.assertEqual("active", self.allocation("a1").state)
        claimed = [a[1] for n, a in self.placement.calls if n == "claim"]
        self.assertEqual(2, len(set(claimed)), claimed)

    def test_concurrent_update_retries_the_same_node(self) -> None:
        self.placement.claim_errors = [
            pc.PlacementError("PUT", "/a", 409, pc.CONCURRENT_UPDATE, "gen")
        ]
        self.backend.allocate(self.job())
        self.assertEqual("active", self.allocation("a1").state)
        claimed = [a[1] for n, a in self.placement.calls if n == "claim"]
        self.assertEqual(2, len(claimed))
        self.assertEqual(1, len(set(claimed)))

    def test_claim_is_undone_when_the_database_refuses(self) -> None:
        job = self.job()
        with self.db.write() as session:  # deleted by the user meanwhile
            session.execute(delete(Allocation))
        self.assertIsNone(self.backend.allocate(job))
        self.assertEqual({}, self.placement.consumers)

    def test_stalled_former_owner_leaves_the_new_owners_claim(self) -> None:
        """After a take-over, the former owner's late reservation must not
        delete the claim that the new owner holds under the same
        allocation UUID (issue 13, item 4)."""
        job = self.job()
        original_reserve = backend_mod.reservation.reserve

        stalled: list[bool] = []

        def taken_over_meanwhile(*args: object, **kwargs: object) -> object:
            if stalled:  # the new owner's own reservation
                return original_reserve(*args, **kwargs)  # type: ignore
            stalled.append(True)
            # The former owner stalled between its claim and its
            # reservation: another conductor took the allocation over
            # and finished it on the node claimed under this UUID.
            with self.db.write() as session:
                session.execute(update(Allocation).values(
                    conductor_affinity="c2"))
            new_owner = Job(job.allocation_id, job.allocation_uuid,
                            job.request, job.filters, "c2")
            self.assertIsNotNone(self.backend.allocate(new_owner))
            return original_reserve(*args, **kwargs)  # type: ignore[arg-type]

        with mock.patch.object(backend_mod.reservation, "reserve",
                               side_effect=taken_over_meanwhile):
            self.assertIsNone(self.backend.allocate(job))
        alloc = self.allocation("a1")
        self.assertEqual(("active", "c2"),
                         (alloc.state, alloc.conductor_affinity))
        node = self.node_of("a1")
        self.assertEqual({node: {RC: 1}}, self.placement.consumers["a1"])

    def test_claim_is_undone_when_the_database_fails(self) -> None:
        job = self.job()
        with mock.patch.object(backend_mod.reservation, "reserve",
                               side_effect=RuntimeError("db down")):
            self.assertRaises(RuntimeError, self.backend.allocate, job)
        self.assertEqual({}, self.placement.consumers)

    def test_node_claimed_elsewhere_is_skipped(self) -> None:
        self.placement.consumers["nova"] = {"n1": {RC: 1}}
        self.backend.allocate(self.job())
        self.assertEqual("n2", self.node_of("a1"))

    def test_nothing_offered_fails_with_a_reason(self) -> None:
        self.placement.consumers["x"] = {"n1": {RC: 1}}
        self.placement.consumers["y"] = {"n2": {RC: 1}}
        self.backend.allocate(self.job())
        alloc = self.allocation("a1")
        self.assertEqual("error", alloc.state)
        self.assertIn("Placement offers none of the 2 matching nodes",
                      alloc.last_error)

    def test_unreachable_placement_fails_after_the_wait(self) -> None:
        self.placement.down = True
        report = self.backend.allocate(self.job())
        alloc = self.allocation("a1")
        self.assertEqual("error", alloc.state)
        self.assertEqual(
            Settled("error", None, alloc.last_error, alloc.updated_at,
                    step="placement"),
            report)
        self.assertIn("Placement is unreachable (waited 0.2 s)",
                      alloc.last_error)
        self.placement.down = False
        self.assertEqual({}, self.placement.consumers)

    def test_an_earlier_claim_is_finished_first(self) -> None:
        self.placement.consumers["a1"] = {"n2": {RC: 1}}
        self.backend.allocate(self.job())
        self.assertEqual("n2", self.node_of("a1"))
        self.assertNotIn("claim", [n for n, _a in self.placement.calls])


class CapacityTests(BackendCase):
    def test_capacity_includes_placement_figures(self) -> None:
        self.backend.allocate(self.job())
        (row,) = self.backend.capacity(None)
        self.assertEqual(
            {"resource_class": RC, "total": 2, "reserved": 0, "used": 1,
             "free": 1},
            row["placement"],
        )
        self.assertEqual((2, 1, 1), (row["total"], row["allocated"],
                                     row["free"]))
        self.placement.down = True
        (row,) = self.backend.capacity("gold")
        self.assertIn("error", row["placement"])


class OwnerTests(BackendCase):
    def test_owner_gets_its_own_node_and_claims_as_its_project(self) -> None:
        with self.db.write() as session:
            session.execute(update(Node).where(Node.uuid == "n2")
                            .values(lessee="p1"))
        self.backend.allocate(self.job(owner="p1"))
        self.assertEqual("n2", self.node_of("a1"))
        self.assertIn(("claim", ("a1", "n2", "p1")), self.placement.calls)
