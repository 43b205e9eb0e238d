"""What a Galera cluster reports, through the real code paths on SQLite.

SQLite cannot produce MariaDB Galera's errors, so the fixture makes the
engine's dialect raise them where Galera does: 1213 (a certification
conflict) at COMMIT of a transaction that wrote rows, and 1047 (a node
out of the Primary component) on any statement.  The errors are the
driver's own classes (``pymysql.err.OperationalError``) wrapped as
SQLAlchemy wraps them, so every classification the server makes is the
one it makes against a real cluster.
"""

from __future__ import annotations

import datetime
import json
import threading
import time
import uuid
from typing import Any
from unittest import mock

import fixtures
import pymysql
import testtools
from sqlalchemy import event, select, update
from sqlalchemy.exc import OperationalError

from baremetal_allocclient import leases
from baremetal_allocclient.server.allocation import conductors, marks
from baremetal_allocclient.server.allocation import workers as workers_mod
from baremetal_allocclient.server.allocation.lease_expiry import LeaseExpiry
from baremetal_allocclient.server.allocation.line.rounds import QueueRounds
from baremetal_allocclient.server.allocation.takeover import Takeover
from baremetal_allocclient.server.allocation.workers import AllocationWorkers
from baremetal_allocclient.server.db.engine import (
    Database,
    is_lost_race,
    is_transient,
    is_unavailable,
)
from baremetal_allocclient.server.db.models import (
    Allocation,
    Conductor,
    Node,
    utcnow,
)
from baremetal_allocclient.server.ironic.fake_hardware import FakeHardware
from baremetal_allocclient.tests.fixtures.wsgi import WsgiApp
from baremetal_allocclient.tests.unit.server._sqlite import SQLiteDatabase

TIMEOUT = datetime.timedelta(seconds=60)
LATEST = {"X-OpenStack-Ironic-API-Version": "latest"}
CERT_FAILURE = (1213, "Deadlock found when trying to get lock; try "
                      "restarting transaction")
NOT_READY = (1047, "WSREP has not yet prepared node for application use")


def galera_error(code: int, message: str, statement: str = "COMMIT"
                 ) -> OperationalError:
    """The driver's error as SQLAlchemy's pymysql dialect raises it."""
    return OperationalError(statement, {},
                            pymysql.err.OperationalError(code, message))


class CommitConflicts(fixtures.Fixture):
    """The next ``times`` commits of a transaction that changed rows fail
    certification (1213 at COMMIT) and change nothing, as on Galera when
    another node's transaction wrote the same rows first."""

    def __init__(self, db: Database, times: int = 1) -> None:
        super().__init__()
        self.db = db
        self.left = times
        self.raised = 0
        self._changes: dict[int, int] = {}

    def _setUp(self) -> None:
        engine = self.db.engine

        def on_begin(conn: Any) -> None:
            on_checkout(conn.connection.dbapi_connection)

        def on_checkout(dbapi: Any, *_args: Any) -> None:
            # (a create's transactions run on the pool's connection,
            # with no SQLAlchemy "begin")
            self._changes[id(dbapi)] = dbapi.total_changes

        event.listen(engine, "begin", on_begin)
        self.addCleanup(event.remove, engine, "begin", on_begin)
        event.listen(engine, "checkout", on_checkout)
        self.addCleanup(event.remove, engine, "checkout", on_checkout)
        real = engine.dialect.do_commit

        def do_commit(fairy: Any) -> None:
            dbapi = fairy.dbapi_connection
            wrote = dbapi.total_changes != self._changes.get(id(dbapi))
            if wrote and self.left > 0:
                self.left -= 1
                self.raised += 1
                dbapi.rollback()
                raise galera_error(*CERT_FAILURE)
            real(fairy)

        self.useFixture(fixtures.MockPatchObject(engine.dialect,
                                                 "do_commit", do_commit))


class ClassificationTests(testtools.TestCase):
    def test_not_ready_is_unavailable_and_no_race(self) -> None:
        exc = galera_error(*NOT_READY, statement="SELECT 1")
        self.assertTrue(is_unavailable(exc))
        self.assertFalse(is_transient(exc))

    def test_commit_error_is_unavailable(self) -> None:
        exc = galera_error(1180, "Got error 6 'No such device or address' "
                                 "during COMMIT")
        self.assertTrue(is_unavailable(exc))

    def test_certification_failure_is_a_lost_race(self) -> None:
        self.assertTrue(is_lost_race(galera_error(*CERT_FAILURE)))
        self.assertFalse(is_lost_race(galera_error(*NOT_READY)))
        self.assertFalse(is_lost_race(ValueError("x")))


class _Case(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.logs = self.useFixture(fixtures.FakeLogger())
        self.db = self.useFixture(SQLiteDatabase()).db

    def allocation(self, affinity: str | None, **values: Any) -> int:
        with self.db.write() as session:
            row = Allocation(
                uuid=str(uuid.uuid4()), state="allocating",
                resource_class="rc-none", traits=[], candidate_nodes=[],
                extra={}, conductor_affinity=affinity,
                created_at=utcnow(), **values,
            )
            session.add(row)
            session.flush()
            return row.id

    def row(self, allocation_id: int) -> Allocation:
        with self.db.read() as session:
            found = session.get(Allocation, allocation_id)
            assert found is not None
            return found

    def dead_conductor(self, name: str) -> None:
        conductors.register(self.db, name, TIMEOUT)
        with self.db.write() as session:
            session.execute(
                update(Conductor).where(Conductor.hostname == name)
                .values(heartbeat_at=utcnow()
                        - datetime.timedelta(seconds=120)))


class NotReadyApiTests(_Case):
    """A Galera node out of the Primary component answers every
    statement with 1047: the API answers 503, never 500."""

    def test_every_statement_failing_with_1047_is_a_503(self) -> None:
        client = self.useFixture(WsgiApp(self.db, "me")).client
        self.useFixture(fixtures.MockPatchObject(
            self.db.engine.dialect, "do_execute",
            side_effect=galera_error(*NOT_READY, statement="SELECT")))
        for method, path, body in (
            ("GET", "/v1/allocations", None),
            ("POST", "/v1/allocations", {"resource_class": "rc"}),
            ("GET", "/v1/nodes", None),
        ):
            resp = client.open(path, method=method, headers=LATEST,
                               json=body)
            self.assertEqual(503, resp.status_code, (method, path))
            fault = json.loads(json.loads(resp.data)["error_message"])
            self.assertIn("database is temporarily unavailable",
                          fault["faultstring"])
        self.assertNotIn("Unexpected error", self.logs.output)


class ApiConflictTests(_Case):
    """A request whose commit fails certification is run again: a
    create, its reservation and a release end as without the conflict,
    never a 500."""

    def setUp(self) -> None:
        super().setUp()
        self.client = self.useFixture(WsgiApp(self.db, "me",
                                              workers=2)).client
        with self.db.write() as session:
            for i in range(2):
                session.add(Node(uuid=f"node-{i}", name=f"n{i}",
                                 driver="fake-hardware", resource_class="rc",
                                 provision_state="available",
                                 power_state="power off", maintenance=False,
                                 instance_info={}))

    def test_create_and_release_survive_conflicts_at_commit(self) -> None:
        for conflicts in (1, 2):
            fixture = CommitConflicts(self.db, times=conflicts)
            with fixture:
                resp = self.client.post(
                    "/v1/allocations", json={"resource_class": "rc"},
                    headers={**LATEST, "Prefer": "wait=10"})
                self.assertEqual(201, resp.status_code, resp.data)
                assert resp.json is not None
                uuid_ = resp.json["uuid"]
                self.assertEqual(conflicts, fixture.raised)
            self.assertEqual("active", self.row_by_uuid(uuid_).state)
        with self.db.read() as session:
            count = len(session.scalars(select(Allocation.id)).all())
        self.assertEqual(2, count)  # no duplicate from a retry
        with CommitConflicts(self.db, times=1) as fixture:
            resp = self.client.delete(f"/v1/allocations/{uuid_}",
                                      headers=LATEST)
            self.assertEqual(204, resp.status_code, resp.data)
            self.assertEqual(1, fixture.raised)
        self.assertNotIn("Unexpected error", self.logs.output)

    def row_by_uuid(self, uuid_: str) -> Allocation:
        with self.db.read() as session:
            return session.scalars(select(Allocation).where(
                Allocation.uuid == uuid_)).one()


class TakeoverConflictTests(_Case):
    def test_certification_conflict_is_a_lost_race(self) -> None:
        self.dead_conductor("dead")
        conductors.register(self.db, "me", TIMEOUT)
        dead = [self.allocation("dead") for _ in range(3)]
        workers = AllocationWorkers(self.db, "me", workers=4, backlog=0)
        gate = threading.Event()
        self.addCleanup(workers.shutdown)
        self.addCleanup(gate.set)
        conflicts = self.useFixture(CommitConflicts(self.db, times=1))
        with mock.patch.object(workers, "process",
                               side_effect=lambda *_a: gate.wait(10)):
            takeover = Takeover(self.db, workers, heartbeat_timeout=60,
                                interval=1)
            # The first claim lost; the round went on with the others.
            self.assertEqual(2, takeover.run_once())
            self.assertEqual(1, conflicts.raised)
            self.assertEqual(["dead", "me", "me"],
                             [self.row(i).conductor_affinity for i in dead])
            self.assertEqual(2, workers.inflight_count())
            # The next round claims the row that was lost.
            self.assertEqual(1, takeover.run_once())
        self.assertEqual("me", self.row(dead[0]).conductor_affinity)


class WorkerConflictTests(_Case):
    def test_a_lost_race_is_retried_not_failed_as_a_bug(self) -> None:
        allocation = self.allocation("me")
        workers = AllocationWorkers(self.db, "me", workers=1, backlog=0)
        self.addCleanup(workers.shutdown)
        conflicts = self.useFixture(CommitConflicts(self.db, times=1))
        self.useFixture(fixtures.MockPatchObject(workers_mod,
                                                 "RETRY_FIRST", 0.01))
        self.assertTrue(workers.try_reserve_slot())
        workers.submit(allocation, self.row(allocation).uuid)
        deadline = time.monotonic() + 10
        while workers.is_inflight(allocation):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
        self.assertEqual(1, conflicts.raised)
        row = self.row(allocation)
        self.assertEqual("error", row.state)
        # The ordinary answer (no node of the class), not "unexpected".
        self.assertIn("no available nodes", row.last_error or "")
        self.assertNotIn("unexpected", (row.last_error or "").lower())


class QueueConflictTests(_Case):
    def test_a_conflict_on_one_expiry_leaves_the_others_done(self) -> None:
        past = utcnow() - datetime.timedelta(seconds=5)
        waiting = [self.allocation("me", queue_deadline=past)
                   for _ in range(3)]
        workers = AllocationWorkers(self.db, "me", workers=1, backlog=0)
        self.addCleanup(workers.shutdown)
        conflicts = self.useFixture(CommitConflicts(self.db, times=1))
        rounds = QueueRounds(self.db, workers, interval=1)
        self.assertEqual(2, rounds.run_once())
        self.assertEqual(1, conflicts.raised)
        self.assertEqual(["allocating", "error", "error"],
                         [self.row(i).state for i in waiting])
        self.assertEqual(1, rounds.run_once())
        self.assertEqual("error", self.row(waiting[0]).state)


class LeaseExpiryConflictTests(_Case):
    def held(self, name: str, extra: dict[str, Any]) -> str:
        with self.db.write() as session:
            node = Node(uuid=f"node-{name}", name=name,
                        driver="fake-hardware", resource_class="rc",
                        provision_state="available",
                        power_state="power off", maintenance=False,
                        instance_info={})
            session.add(node)
            session.flush()
            alloc = Allocation(uuid=f"a-{name}", state="active",
                               resource_class="rc",
                               **marks.lease_columns_of(extra),
                               node_id=node.id, created_at=utcnow())
            session.add(alloc)
            session.flush()
            node.allocation_id = alloc.id
            node.instance_uuid = alloc.uuid
        return f"a-{name}"

    def exists(self, uuid_: str) -> bool:
        with self.db.read() as session:
            return session.scalars(select(Allocation.id).where(
                Allocation.uuid == uuid_)).first() is not None

    def test_a_conflict_on_one_lease_leaves_the_others_released(
            self) -> None:
        now = datetime.datetime(2030, 1, 2, tzinfo=datetime.timezone.utc)
        ended = leases.lease_extra("1m", now - datetime.timedelta(hours=1))
        held = [self.held(f"n{i}", ended) for i in range(3)]
        hardware = FakeHardware(self.db, step_delay=0.01)
        self.addCleanup(hardware.shutdown)
        conflicts = self.useFixture(CommitConflicts(self.db, times=1))
        expiry = LeaseExpiry(self.db, hardware, 1.0)
        self.assertEqual(2, len(expiry.run_once(now)))
        self.assertEqual(1, conflicts.raised)
        self.assertEqual([True, False, False],
                         [self.exists(u) for u in held])
        self.assertEqual(1, len(expiry.run_once(now)))
        self.assertFalse(self.exists(held[0]))
