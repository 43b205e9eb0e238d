"""The database backend against a real SQLite file: every filter reaches
the selection and reservation statements, and what ``allocate`` reports
is exactly what it stored (the API answers ``Prefer: wait`` from it)."""

from __future__ import annotations

import random

import testtools
from sqlalchemy import delete, select

from baremetal_allocclient.server.allocation import selection
from baremetal_allocclient.server.allocation.backends.base import Job, Settled
from baremetal_allocclient.server.allocation.backends.database import (
    DatabaseBackend,
)
from baremetal_allocclient.server.allocation.release import freeing
from baremetal_allocclient.server.db.models import (
    Allocation,
    Node,
    NodeTrait,
    utcnow,
)
from baremetal_allocclient.tests.unit.server._sqlite import SQLiteDatabase


class DatabaseBackendTests(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.db = self.useFixture(SQLiteDatabase()).db
        self.backend = DatabaseBackend(self.db, random.Random(7))
        # n1: plain; n2: GPU trait, leased to p1; n3: another class.
        with self.db.write() as session:
            for name, rc, lessee in (("n1", "gold", None),
                                     ("n2", "gold", "p1"),
                                     ("n3", "silver", None)):
                node = Node(uuid=f"uuid-{name}", name=name,
                            driver="fake-hardware", resource_class=rc,
                            provision_state="available",
                            power_state="power off", maintenance=False,
                            lessee=lessee, instance_info={"keep": 1})
                session.add(node)
                session.flush()
                if name == "n2":
                    session.add(NodeTrait(node_id=node.id,
                                          trait="CUSTOM_GPU"))

    def job(self, uuid: str, **request: object) -> Job:
        req = selection.Request("gold", **request)  # type: ignore[arg-type]
        with self.db.write() as session:
            alloc = Allocation(uuid=uuid, name=req.name, state="allocating",
                               resource_class=req.resource_class,
                               traits=list(req.traits),
                               conductor_affinity="c1", created_at=utcnow())
            session.add(alloc)
            session.flush()
            alloc_id = alloc.id
        return Job(alloc_id, uuid, req, tuple(selection.active_filters(req)),
                   "c1")

    def stored(self, uuid: str, step: str | None = None) -> Settled:
        """The row as the API would render it, in the report's shape
        (with ``step``, which is counted, not stored)."""
        with self.db.read() as session:
            row = session.execute(
                select(Allocation.state, Node.uuid, Allocation.last_error,
                       Allocation.updated_at, Allocation.funnel_error)
                .outerjoin(Node, Node.id == Allocation.node_id)
                .where(Allocation.uuid == uuid)
            ).one()
        assert row.updated_at is not None
        return Settled(row.state, row[1], row.last_error, row.updated_at,
                       row.funnel_error, step)

    def test_each_filter_narrows_to_the_one_matching_node(self) -> None:
        for uuid, request in (
            ("by-traits", {"traits": ("CUSTOM_GPU",)}),
            ("by-owner", {"owner": "p1"}),
            ("by-candidates", {"candidate_nodes": ("uuid-n2", "uuid-n3")}),
        ):
            job = self.job(uuid, **request)
            report = self.backend.allocate(job)
            self.assertEqual(self.stored(uuid), report)
            assert report is not None
            self.assertEqual(("active", "uuid-n2"),
                             (report.state, report.node_uuid))
            with self.db.read() as session:
                info = session.scalar(select(Node.instance_info)
                                      .where(Node.uuid == "uuid-n2"))
            self.assertEqual({"keep": 1,
                              "traits": list(job.request.traits)}, info)
            with self.db.write() as session:
                alloc = session.scalars(select(Allocation).where(
                    Allocation.uuid == uuid)).one()
                freeing.release_in_session(session, alloc)

    def test_a_node_named_like_the_allocation_is_preferred(self) -> None:
        for _ in range(5):
            report = self.backend.allocate(self.job("named", name="n2"))
            assert report is not None
            self.assertEqual("uuid-n2", report.node_uuid)
            with self.db.write() as session:
                alloc = session.scalars(select(Allocation).where(
                    Allocation.uuid == "named")).one()
                freeing.release_in_session(session, alloc)

    def test_no_match_reports_the_stored_error(self) -> None:
        report = self.backend.allocate(
            self.job("none", traits=("CUSTOM_MISSING",)))
        self.assertEqual(self.stored("none", "traits"), report)
        assert report is not None
        self.assertEqual("error", report.state)
        self.assertEqual("Failed to process allocation none: no suitable "
                         "nodes have the requested traits CUSTOM_MISSING.",
                         report.last_error)
        self.assertIn("CUSTOM_MISSING; funnel: resource_class ",
                      str(report.funnel_error))

    def test_fleet_exhausted_then_error(self) -> None:
        reports = [self.backend.allocate(self.job(f"a{i}"))
                   for i in range(3)]
        states = sorted(r.state for r in reports if r is not None)
        self.assertEqual(["active", "active", "error"], states)
        for i, report in enumerate(reports):
            step = "unreserved" if report and report.state == "error" \
                else None
            self.assertEqual(self.stored(f"a{i}", step), report)

    def test_a_deleted_allocation_is_left_alone_and_not_reported(self) -> None:
        job = self.job("gone")
        with self.db.write() as session:
            session.execute(delete(Allocation))
        self.assertIsNone(self.backend.allocate(job))
        with self.db.read() as session:
            self.assertEqual([], list(session.scalars(
                select(Node.allocation_id).where(
                    Node.allocation_id.is_not(None)))))


class DrawTests(testtools.TestCase):
    def test_each_backend_draws_its_own_sequence(self) -> None:
        """Two processes (two backends) do not pick the same pivots and
        orders: each generator is seeded on its own."""
        db = self.useFixture(SQLiteDatabase()).db
        first, second = DatabaseBackend(db), DatabaseBackend(db)
        self.assertNotEqual([first._draw(2**32) for _ in range(4)],
                            [second._draw(2**32) for _ in range(4)])
