"""Conductor registration, take-over and outage handling on SQLite."""

from __future__ import annotations

import datetime
import sqlite3
import threading
import time
import uuid
from unittest import mock

import fixtures
import psycopg
import pymysql
import testtools
from sqlalchemy import select, update
from sqlalchemy.exc import (
    DataError,
    DBAPIError,
    IntegrityError,
    InterfaceError,
    OperationalError,
)
from sqlalchemy.exc import TimeoutError as PoolTimeout

from baremetal_allocclient.server.allocation import conductors
from baremetal_allocclient.server.allocation import workers as workers_mod
from baremetal_allocclient.server.allocation.backends.base import Job, Settled
from baremetal_allocclient.server.allocation.line.rounds import QueueRounds
from baremetal_allocclient.server.allocation.membership import (
    ConductorNameInUse,
    Membership,
)
from baremetal_allocclient.server.allocation.takeover import Takeover
from baremetal_allocclient.server.allocation.workers import AllocationWorkers
from baremetal_allocclient.server.db.engine import (
    is_bad_data,
    is_transient,
    is_unavailable,
)
from baremetal_allocclient.server.db.models import (
    Allocation,
    Conductor,
    utcnow,
)
from baremetal_allocclient.tests.unit.server._sqlite import SQLiteDatabase

TIMEOUT = datetime.timedelta(seconds=60)


class _Deadlock(Exception):
    sqlstate = "40P01"


def _sqlite_error(message: str, code: int) -> sqlite3.OperationalError:
    error = sqlite3.OperationalError(message)
    error.sqlite_errorcode = code  # set by sqlite3 itself when raised
    return error


def outage() -> OperationalError:
    """What psycopg raises when the server refuses the connection."""
    return OperationalError("SELECT", {},
                            psycopg.OperationalError("refused"))


class IsUnavailableTests(testtools.TestCase):
    """Only connection-level failures are outages (503, retried); the
    rest is the request's fault (400) or a bug (500), never retried."""

    def test_table(self) -> None:
        lost = DBAPIError("SELECT 1", {}, Exception("gone"),
                          connection_invalidated=True)
        mysql = pymysql.err
        cases: list[tuple[BaseException, bool, bool]] = [
            (outage(), True, False),
            (lost, True, False),
            (PoolTimeout("QueuePool limit reached"), True, False),
            (OperationalError("SELECT 1", {}, psycopg.errors.AdminShutdown(
                "terminating connection")), True, False),
            (OperationalError("SELECT 1", {},
                              psycopg.errors.ConnectionFailure("x")),
             True, False),
            (OperationalError("SELECT 1", {}, mysql.OperationalError(
                2013, "Lost connection to server during query")),
             True, False),
            (OperationalError("SELECT 1", {}, mysql.OperationalError(
                2003, "Can't connect")), True, False),
            (InterfaceError("SELECT 1", {}, mysql.InterfaceError(0, "")),
             True, False),
            (OperationalError("SELECT 1", {}, _sqlite_error(
                "database is locked", 5)), True, False),
            (OperationalError("SELECT 1", {}, _sqlite_error(
                "disk I/O error", 10 | 3 << 8)), True, False),
            (OperationalError("SELECT 1", {}, _sqlite_error(
                "no such table: nodes", 1)), False, False),
            # Python 3.10's sqlite3 has no error codes: the message counts.
            (OperationalError("SELECT 1", {}, sqlite3.OperationalError(
                "database is locked")), True, False),
            (OperationalError("SELECT 1", {}, sqlite3.OperationalError(
                "no such table: nodes")), False, False),
            (OperationalError("SELECT 1", {}, _Deadlock()), False, False),
            (OperationalError("SELECT 1", {}, mysql.OperationalError(
                1213, "Deadlock found")), False, False),
            # MariaDB's JSON check refusing NaN, and a bad string value:
            # both were 503 "unavailable" before.
            (OperationalError("INSERT", {}, mysql.OperationalError(
                4025, "CONSTRAINT `nodes.extra` failed")), False, True),
            (OperationalError("INSERT", {}, mysql.OperationalError(
                1366, "Incorrect string value")), False, True),
            (OperationalError("SELECT 1", {}, mysql.OperationalError(
                1146, "Table 'x' doesn't exist")), False, False),
            (DataError("INSERT", {}, psycopg.DataError(
                "PostgreSQL text fields cannot contain NUL (0x00) bytes")),
             False, True),
            (DataError("INSERT", {}, psycopg.errors.InvalidTextRepresentation(
                "invalid input syntax for type json")), False, True),
            (OperationalError("SELECT 1", {}, Exception("refused")),
             False, False),
            (IntegrityError("INSERT", {}, Exception("duplicate")),
             False, False),
            (DBAPIError("SELECT 1", {}, Exception("syntax")), False, False),
            (ValueError("not a database error"), False, False),
        ]
        for exc, unavailable, bad_data in cases:
            self.assertEqual(unavailable, is_unavailable(exc), repr(exc))
            self.assertEqual(bad_data, is_bad_data(exc), repr(exc))

    def test_lock_timeouts_are_transient_on_both_servers(self) -> None:
        for orig in (psycopg.errors.LockNotAvailable("lock timeout"),
                     pymysql.err.OperationalError(1205, "Lock wait timeout")):
            exc = OperationalError("UPDATE", {}, orig)
            self.assertTrue(is_transient(exc), repr(orig))
            self.assertFalse(is_unavailable(exc), repr(orig))


class _DbCase(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.logs = self.useFixture(fixtures.FakeLogger())
        self.db = self.useFixture(SQLiteDatabase()).db
        self.uuids: dict[int, str] = {}

    def _allocation(self, affinity: str | None,
                    age: float = 0.0) -> int:
        created = utcnow() - datetime.timedelta(seconds=age)
        with self.db.write() as session:
            row = Allocation(
                uuid=str(uuid.uuid4()), state="allocating",
                resource_class="rc-none", traits=[], candidate_nodes=[],
                extra={}, conductor_affinity=affinity, created_at=created,
            )
            session.add(row)
            session.flush()
            self.uuids[row.id] = row.uuid
            return row.id

    def _age_heartbeat(self, name: str, seconds: float) -> None:
        with self.db.write() as session:
            session.execute(
                update(Conductor).where(Conductor.hostname == name)
                .values(heartbeat_at=utcnow()
                        - datetime.timedelta(seconds=seconds))
            )

    def _affinity(self, allocation_id: int) -> str | None:
        with self.db.read() as session:
            return session.scalar(
                select(Allocation.conductor_affinity)
                .where(Allocation.id == allocation_id)
            )


class ConductorQueryTests(_DbCase):
    def test_register_heartbeat_and_offline(self) -> None:
        self.assertTrue(conductors.register(self.db, "a", TIMEOUT))
        rows, now = conductors.conductors_and_now(self.db)
        self.assertEqual(["a"], [r.name for r in rows])
        self.assertTrue(rows[0].online)
        self.assertLess(abs((now - rows[0].heartbeat_at).total_seconds()), 5)
        self.assertTrue(conductors.heartbeat(self.db, "a"))
        self.assertFalse(conductors.heartbeat(self.db, "unknown"))
        conductors.mark_offline(self.db, "a")
        rows, _now = conductors.conductors_and_now(self.db)
        self.assertFalse(rows[0].online)
        self.assertTrue(conductors.heartbeat(self.db, "a"))
        rows, _now = conductors.conductors_and_now(self.db)
        self.assertTrue(rows[0].online)

    def test_register_is_refused_only_while_a_live_process_holds_it(
            self) -> None:
        self.assertTrue(conductors.register(self.db, "a", TIMEOUT))  # new
        self.assertFalse(conductors.register(self.db, "a", TIMEOUT))  # twin
        conductors.mark_offline(self.db, "a")  # stopped gracefully
        self.assertTrue(conductors.register(self.db, "a", TIMEOUT))
        self._age_heartbeat("a", 61)  # crashed long ago
        self.assertTrue(conductors.register(self.db, "a", TIMEOUT))
        rows, _now = conductors.conductors_and_now(self.db)
        self.assertEqual(["a"], [r.name for r in rows])  # one row reused

    def test_take_over_is_a_compare_and_set(self) -> None:
        dead = self._allocation("dead")
        orphan = self._allocation(None)
        take = conductors.take_over
        self.assertTrue(take(self.db, dead, self.uuids[dead], "dead", "b"))
        # The second claimant lost: the affinity is no longer "dead".
        self.assertFalse(take(self.db, dead, self.uuids[dead], "dead", "c"))
        self.assertEqual("b", self._affinity(dead))
        self.assertTrue(take(self.db, orphan, self.uuids[orphan], None, "c"))
        self.assertFalse(take(self.db, orphan, self.uuids[orphan], None,
                              "b"))
        self.assertEqual("c", self._affinity(orphan))
        # The id alone is not enough: the UUID must match too.
        other = self._allocation("dead")
        self.assertFalse(take(self.db, other, self.uuids[dead], "dead", "b"))
        self.assertEqual("dead", self._affinity(other))

    def test_allocating_ids_and_counts(self) -> None:
        old = self._allocation("a", age=60)
        new = self._allocation("a")
        self._allocation("b")
        self.assertEqual({"a": 2, "b": 1},
                         conductors.allocating_affinities(self.db))
        self.assertEqual([old, new], [
            i for i, _u in conductors.allocating_ids(self.db, "a", None)
        ])
        self.assertEqual([old], [
            i for i, _u in conductors.allocating_ids(self.db, "a", 1)
        ])
        cutoff = utcnow() - datetime.timedelta(seconds=30)
        self.assertEqual([old], [
            i for i, _u in conductors.allocating_ids(
                self.db, "a", None, created_before=cutoff)
        ])


class MembershipTests(_DbCase):
    def test_live_twin_refuses_the_name(self) -> None:
        twin = Membership(self.db, "same", interval=0.05, timeout=0.3)
        twin.join()
        twin.start()
        self.addCleanup(twin.leave)
        second = Membership(self.db, "same", interval=0.05, timeout=0.3)
        self.assertRaises(ConductorNameInUse, second.join)

    def test_crashed_predecessor_is_waited_out(self) -> None:
        conductors.register(self.db, "same", TIMEOUT)  # never beats again
        Membership(self.db, "same", interval=0.05, timeout=0.3).join()

    def test_leave_marks_offline(self) -> None:
        member = Membership(self.db, "me", interval=0.05, timeout=1)
        member.join()
        member.start()
        member.leave()
        rows, _now = conductors.conductors_and_now(self.db)
        self.assertEqual([("me", False)], [(r.name, r.online) for r in rows])
        # A graceful stop frees the name at once.
        Membership(self.db, "me", interval=0.05, timeout=60).join()


class TakeoverTests(_DbCase):
    def _workers(self, slots: int) -> AllocationWorkers:
        workers = AllocationWorkers(self.db, "me", workers=slots, backlog=0)
        return workers

    def test_claims_dead_rows_up_to_free_slots_only(self) -> None:
        for name in ("me", "dead", "live"):
            conductors.register(self.db, name, TIMEOUT)
        self._age_heartbeat("dead", 120)
        dead = [self._allocation("dead") for _ in range(3)]
        live = self._allocation("live")
        mine = self._allocation("me")
        gate = threading.Event()
        workers = self._workers(2)
        with mock.patch.object(workers, "process",
                               side_effect=lambda _i, _u, _job: gate.wait(10)):
            takeover = Takeover(self.db, workers, heartbeat_timeout=60,
                                interval=1)
            self.assertEqual(2, takeover.run_once())
            self.assertEqual(0, takeover.run_once())  # pool full
            gate.set()
            workers.shutdown()
        self.assertEqual(["me", "me", "dead"],
                         [self._affinity(i) for i in dead])
        self.assertEqual("live", self._affinity(live))
        self.assertEqual("me", self._affinity(mine))

    def test_every_waiting_orphan_is_claimed_in_one_round(self) -> None:
        """Issue 20 (a): a dead process's waiting allocations hold no
        worker slot; one round claims all of them, whatever the free
        slots, and wakes the queue rounds, which fail the expired ones."""
        for name in ("me", "dead"):
            conductors.register(self.db, name, TIMEOUT)
        self._age_heartbeat("dead", 120)
        now = utcnow()
        expired = [self._waiting("dead", now - datetime.timedelta(seconds=5))
                   for _ in range(5)]
        later = [self._waiting("dead", now + datetime.timedelta(hours=1))
                 for _ in range(5)]
        workers = self._workers(2)
        self.addCleanup(workers.shutdown)
        rounds = QueueRounds(self.db, workers, interval=60)
        woken: list[bool] = []
        takeover = Takeover(self.db, workers, heartbeat_timeout=60,
                            interval=1, wake_queue=lambda: woken.append(True))
        with mock.patch.object(workers, "submit") as submit:
            self.assertEqual(10, takeover.run_once())
        submit.assert_not_called()  # the queue rounds serve them
        self.assertEqual([True], woken)
        self.assertEqual(["me"] * 10,
                         [self._affinity(i) for i in expired + later])
        self.assertEqual(5, rounds.run_once())
        with self.db.read() as session:
            states = dict(session.execute(
                select(Allocation.id, Allocation.state)).all())
        self.assertEqual(["error"] * 5, [states[i] for i in expired])
        self.assertEqual(["allocating"] * 5, [states[i] for i in later])

    def _waiting(self, affinity: str, deadline: datetime.datetime) -> int:
        allocation = self._allocation(affinity)
        with self.db.write() as session:
            session.execute(update(Allocation)
                            .where(Allocation.id == allocation)
                            .values(queue_deadline=deadline))
        return allocation

    def test_own_heartbeat_lag_takes_nothing(self) -> None:
        conductors.register(self.db, "me", TIMEOUT)
        self._age_heartbeat("me", 3600)
        mine = self._allocation("me")
        workers = self._workers(2)
        self.addCleanup(workers.shutdown)
        takeover = Takeover(self.db, workers, heartbeat_timeout=60,
                            interval=1)
        with mock.patch.object(workers, "submit") as submit:
            self.assertEqual(0, takeover.run_once())
        submit.assert_not_called()
        self.assertEqual("me", self._affinity(mine))

    def test_requeues_own_rows_no_worker_holds(self) -> None:
        conductors.register(self.db, "me", TIMEOUT)
        stale = self._allocation("me", age=60)
        self._allocation("me")  # just stored: its request submits it
        workers = self._workers(4)
        self.addCleanup(workers.shutdown)
        takeover = Takeover(self.db, workers, heartbeat_timeout=60,
                            interval=1)
        with mock.patch.object(workers, "submit") as submit:
            self.assertEqual(1, takeover.run_once())
        submit.assert_called_once_with(stale, self.uuids[stale])


class WorkerOutageTests(_DbCase):
    def test_unavailable_database_is_retried_not_failed(self) -> None:
        allocation = self._allocation("me")
        workers = AllocationWorkers(self.db, "me", workers=1, backlog=0)
        down_error = outage()
        calls: list[int] = []

        def flaky(allocation_id: int, _uuid: str, _job: object) -> None:
            calls.append(allocation_id)
            if len(calls) < 3:
                raise down_error

        with (
            mock.patch.object(workers_mod, "RETRY_FIRST", 0.01),
            mock.patch.object(workers, "process", side_effect=flaky),
        ):
            self.assertTrue(workers.try_reserve_slot())
            workers.submit(allocation, self.uuids[allocation])
            deadline = time.monotonic() + 10
            while workers.is_inflight(allocation):
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.01)
            workers.shutdown()
        self.assertEqual([allocation] * 3, calls)
        self.assertIn("Database unavailable while processing allocation",
                      self.logs.output)
        with self.db.read() as session:
            state = session.scalar(select(Allocation.state)
                                   .where(Allocation.id == allocation))
        self.assertEqual("allocating", state)  # never marked error
        self.assertEqual(1, workers._slots.free())

    def test_stop_during_outage_leaves_the_row(self) -> None:
        allocation = self._allocation("me")
        workers = AllocationWorkers(self.db, "me", workers=1, backlog=0)
        down_error = outage()
        attempted = threading.Event()

        def down(_allocation_id: int, _uuid: str, _job: object) -> None:
            attempted.set()
            raise down_error

        with mock.patch.object(workers, "process", side_effect=down):
            self.assertTrue(workers.try_reserve_slot())
            workers.submit(allocation, self.uuids[allocation])
            self.assertTrue(attempted.wait(10))
            workers.shutdown()  # must not hang in the retry loop
        self.assertFalse(workers.is_inflight(allocation))
        with self.db.read() as session:
            row = session.execute(
                select(Allocation.state, Allocation.conductor_affinity)
                .where(Allocation.id == allocation)).one()
        self.assertEqual(("allocating", "me"), tuple(row))


class SettleTests(_DbCase):
    """``settle``: the request thread's own attempt, and its hand-overs."""

    def setUp(self) -> None:
        super().setUp()
        self.allocation = self._allocation("me")
        self.workers = AllocationWorkers(self.db, "me", workers=1,
                                         backlog=0)
        self.addCleanup(self.workers.shutdown)
        with self.db.read() as session:
            row = session.get(Allocation, self.allocation)
            assert row is not None
            self.job = self.workers.job_for(row)
        #: The thread of every backend attempt, in order.
        self.threads: list[threading.Thread] = []
        self.outages = 0  # how many attempts find the database down
        real = self.workers.backend.allocate

        def spy(job: Job) -> Settled | None:
            self.threads.append(threading.current_thread())
            if len(self.threads) <= self.outages:
                raise outage()
            return real(job)

        patcher = mock.patch.object(self.workers.backend, "allocate",
                                    side_effect=spy)
        patcher.start()
        self.addCleanup(patcher.stop)

    def settle(self, wait: float = 10) -> Settled | None:
        self.assertTrue(self.workers.try_reserve_slot())
        return self.workers.settle(self.allocation, self.job, wait)

    def assert_settled_in_error(self, settled: Settled | None) -> None:
        assert settled is not None
        self.assertEqual("error", settled.state)  # no node has rc-none
        self.assertIn("no available nodes match the resource class "
                      "rc-none", str(settled.last_error))
        self.assertFalse(self.workers.is_inflight(self.allocation))
        self.assertEqual(1, self.workers.free_slots())

    def test_the_calling_thread_settles_with_the_database_backend(
            self) -> None:
        settled = self.settle()
        self.assertEqual([threading.current_thread()], self.threads)
        self.assert_settled_in_error(settled)

    def test_a_blocking_backend_stays_on_the_workers(self) -> None:
        with mock.patch.object(self.workers.backend, "blocking", True):
            settled = self.settle()
        self.assertEqual(1, len(self.threads))
        self.assertIsNot(threading.current_thread(), self.threads[0])
        self.assert_settled_in_error(settled)

    def test_an_unavailable_database_hands_the_job_to_a_worker(self) -> None:
        self.outages = 2
        with mock.patch.object(workers_mod, "RETRY_FIRST", 0.01):
            settled = self.settle()
        self.assertEqual(3, len(self.threads))
        self.assertIs(threading.current_thread(), self.threads[0])
        self.assertIsNot(threading.current_thread(), self.threads[1])
        self.assertIn("handing it to a worker", self.logs.output)
        self.assert_settled_in_error(settled)

    def test_a_bug_is_recorded_without_its_text(self) -> None:
        with mock.patch.object(
            self.workers.backend, "allocate",
            side_effect=RuntimeError("SELECT secret FROM nodes"),
        ):
            self.assertIsNone(self.settle())
        with self.db.read() as session:
            row = session.get(Allocation, self.allocation)
            assert row is not None
        self.assertEqual(("error", workers_mod.UNEXPECTED_FAILURE),
                         (row.state, row.last_error))
        self.assertIn("SELECT secret", self.logs.output)  # logged instead

    def test_a_wait_that_ends_first_answers_none(self) -> None:
        self.workers._delay = 0.5  # as serve --allocation-delay 0.5
        self.assertIsNone(self.settle(wait=0.05))
        self.assertTrue(self.workers.is_inflight(self.allocation))
