"""Pooled connections are pinged only after sitting idle, and a
connection that died is replaced without a client seeing it on a read.

On PostgreSQL and MariaDB (SQLite has no connection to lose): a
connection handed out again within ``PING_AFTER_IDLE`` of its return is
not pinged (no round trip per request on a busy server); one idle longer
is, and a dead one is replaced before use.  A connection killed by the
database a moment after its last use fails the next statement: a read
is then run again on a fresh connection (200), a write answers 503
"changed nothing" and stores nothing.  Each class runs on a scratch
database of its kind; the connection is killed from a second one
(``pg_terminate_backend``, ``KILL``).  A connection lost between its
commit and its return to the pool is replaced, with no traceback logged.

The driver's blocks keep their connection for the next block
(``KeptConnection``) when the pool has more than one: each test runs
with a pool of one connection (every block takes it from the pool) and
with two (every block but the first takes the kept one), and a kept
connection is dropped when the pool finds another one lost.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any, ClassVar
from unittest import mock

import fixtures
import pymysql
import testtools
from sqlalchemy import create_engine, literal_column, select, text
from sqlalchemy.exc import DBAPIError

from baremetal_allocclient.server.db import engine as db_engine
from baremetal_allocclient.server.db.driver_statements import DriverStatement
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.tests.fixtures import databases
from baremetal_allocclient.tests.fixtures.wsgi import WsgiApp

_HEADERS = {"X-OpenStack-Ironic-API-Version": "latest"}
_BACKEND_ID = {"postgresql": "pg_backend_pid()",
               "mysql": "CONNECTION_ID()"}
_KILL = {"postgresql": "SELECT pg_terminate_backend({})",
         "mysql": "KILL {}"}


class _IdlePing:
    kind: ClassVar[str]
    #: The pool's size: 1, every block takes the one pooled connection;
    #: 2, the driver's blocks take the one they left (KeptConnection).
    connections: ClassVar[int] = 1
    db: Database

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        case: Any = self
        scratch = databases.scratch(case.addCleanup, self.kind)
        self.url = scratch.url
        self.db = self.database()
        self.db.upgrade()
        admin = create_engine(scratch.url, isolation_level="AUTOCOMMIT")
        case.addCleanup(admin.dispose)
        self.admin = admin
        self.count_pings()

    def count_pings(self) -> None:
        """``self.do_ping`` counts the pings of ``self.db``'s pool."""
        case: Any = self
        dialect = self.db.engine.dialect
        pings = mock.patch.object(dialect, "do_ping", wraps=dialect.do_ping)
        self.do_ping = pings.start()
        case.addCleanup(pings.stop)

    def database(self) -> Database:
        """A Database on the scratch one whose blocks all get the same
        connection."""
        case: Any = self
        db = Database(self.url, max_connections=self.connections)
        case.addCleanup(db.dispose)
        return db

    def backend(self) -> int:
        """The database's id of the pooled connection (one statement)."""
        backend = DriverStatement(
            select(literal_column(_BACKEND_ID[self.kind]).label("id")),
            self.db.engine.dialect)
        with self.db.statement_connection() as conn:
            return int(backend.first(conn, {}).id)

    def kill(self, backend: int) -> None:
        with self.admin.connect() as conn:
            conn.execute(text(_KILL[self.kind].format(int(backend))))
        time.sleep(0.1)  # the server closes its end

    def idle(self) -> None:
        time.sleep(db_engine.PING_AFTER_IDLE + 0.2)

    def test_pinged_only_after_sitting_idle(self) -> None:
        case: Any = self
        first = self.backend()
        for _ in range(20):
            case.assertEqual(first, self.backend())
        case.assertEqual(0, self.do_ping.call_count)
        self.idle()
        case.assertEqual(first, self.backend())
        case.assertEqual(1, self.do_ping.call_count)

    def test_a_dead_idle_connection_is_replaced_before_use(self) -> None:
        case: Any = self
        first = self.backend()
        self.kill(first)
        self.idle()
        case.assertNotEqual(first, self.backend())
        case.assertEqual(1, self.do_ping.call_count)

    def test_read_on_a_connection_just_killed_is_run_again(self) -> None:
        case: Any = self
        # Never pinged: on a loaded machine the connection could sit in
        # the pool past PING_AFTER_IDLE between the kill and the read,
        # and the ping, not the read run again, would replace it.
        case.useFixture(fixtures.MonkeyPatch(
            "baremetal_allocclient.server.db.engine.PING_AFTER_IDLE",
            3600.0))
        self.db.dispose()
        self.db = self.database()
        self.count_pings()
        client = case.useFixture(WsgiApp(self.db, "t")).client
        listed = client.get("/v1/allocations", headers=_HEADERS)
        case.assertEqual(200, listed.status_code, listed.text)

        self.kill(self.backend())
        listed = client.get("/v1/allocations", headers=_HEADERS)
        case.assertEqual(200, listed.status_code, listed.text)
        case.assertEqual(0, self.do_ping.call_count)

        self.kill(self.backend())
        posted = client.post("/v1/allocations", headers=_HEADERS,
                             json={"resource_class": "rc"})
        case.assertEqual(503, posted.status_code, posted.text)
        case.assertEqual(
            "The database is temporarily unavailable; retry later.",
            json.loads(posted.json["error_message"])["faultstring"])
        listed = client.get("/v1/allocations", headers=_HEADERS)
        case.assertEqual([], listed.json["allocations"])

    def test_a_connection_lost_after_its_commit_leaves_no_traceback(
            self) -> None:
        """The database drops a connection between a transaction's
        commit and the connection's return to the pool, whose rollback
        then fails on MariaDB (psycopg sends none outside a
        transaction): the connection is replaced, with a warning line and
        no traceback in the log, and the next read answers 200."""
        case: Any = self
        log = case.useFixture(fixtures.FakeLogger(level=logging.INFO))
        with self.db.engine.connect() as conn:
            with conn.begin():
                backend = conn.scalar(text(
                    f"SELECT {_BACKEND_ID[self.kind]}"))
            self.kill(backend)
        case.assertNotIn("Traceback", log.output)
        if self.kind == "mysql":
            case.assertIn("Database unavailable as a connection went back "
                          "to the pool (replaced)", log.output)
            case.assertNotEqual(backend, self.backend())
        client = case.useFixture(WsgiApp(self.db, "t")).client
        listed = client.get("/v1/allocations", headers=_HEADERS)
        case.assertEqual(200, listed.status_code, listed.text)
        case.assertNotIn("Traceback", log.output)


class _KeptIdlePing(_IdlePing):
    connections = 2

    def test_kept_while_the_pool_found_one_lost_is_not_used(self) -> None:
        """Both connections die (the database restarted, say); the pool
        finds one lost, and the next block does not take the kept one,
        however recently it was used (here nothing counts as idle)."""
        case: Any = self
        with mock.patch.object(db_engine, "PING_AFTER_IDLE", 3600):
            self.db = Database(self.db.url, max_connections=2)
            case.addCleanup(self.db.dispose)
            kept = self.backend()
            with self.db.engine.connect() as other:
                pooled = other.scalar(text(
                    f"SELECT {_BACKEND_ID[self.kind]}"))
                self.kill(kept)
                self.kill(pooled)
                with case.assertRaises(DBAPIError) as lost:
                    other.scalar(text("SELECT 1"))
                case.assertTrue(lost.exception.connection_invalidated)
            # A write, which fails on a lost connection (a read would be
            # run again on another).
            with self.db.write_connection() as conn:
                written_on = DriverStatement(
                    select(literal_column(_BACKEND_ID[self.kind])
                           .label("id")),
                    self.db.engine.dialect).first(conn, {}).id
        case.assertNotIn(written_on, (kept, pooled))
        case.assertEqual(0, self.do_ping.call_count)


    def test_a_block_ending_after_the_pool_found_one_lost_is_not_kept(
            self) -> None:
        """A block still running when the pool finds a connection lost
        (its own died too) ends after another block took from the pool:
        its connection is not handed to the next write."""
        case: Any = self
        with mock.patch.object(db_engine, "PING_AFTER_IDLE", 3600):
            self.db = Database(self.db.url, max_connections=3)
            case.addCleanup(self.db.dispose)
            backend_id = DriverStatement(
                select(literal_column(_BACKEND_ID[self.kind]).label("id")),
                self.db.engine.dialect)
            running = self.db.statement_connection()
            conn = running.__enter__()
            late = backend_id.first(conn, {}).id
            with self.db.engine.connect() as other:
                pooled = other.scalar(text(
                    f"SELECT {_BACKEND_ID[self.kind]}"))
                self.kill(late)
                self.kill(pooled)
                with case.assertRaises(DBAPIError):
                    other.scalar(text("SELECT 1"))
            meanwhile = self.db.statement_connection()
            meanwhile.__enter__()  # another thread's: nothing kept to take
            running.__exit__(None, None, None)  # its statements were done
            meanwhile.__exit__(None, None, None)
            with self.db.write_connection() as conn:
                written_on = backend_id.first(conn, {}).id
        case.assertNotIn(written_on, (late, pooled))


class PostgreSQLIdlePing(_IdlePing, testtools.TestCase):
    kind = "postgresql"


class MariaDBIdlePing(_IdlePing, testtools.TestCase):
    kind = "mysql"

    def test_a_rollback_on_return_refused_by_galera_leaves_no_traceback(
            self) -> None:
        """Galera answers 1047 to a node out of the Primary Component:
        a connection whose ROLLBACK on its return to the pool gets it is
        replaced, with a warning line and no traceback in the log."""
        case: Any = self
        log = case.useFixture(fixtures.FakeLogger(level=logging.INFO))
        refused = pymysql.err.OperationalError(
            1047, "WSREP has not yet prepared node for application use")
        dialect = self.db.engine.dialect
        # The transaction commits, then the connection goes back.
        with (mock.patch.object(dialect, "do_rollback",
                                side_effect=refused) as rollback,
              self.db.engine.connect() as conn, conn.begin()):
            backend = conn.scalar(text(f"SELECT {_BACKEND_ID[self.kind]}"))
        case.assertEqual(1, rollback.call_count)
        case.assertNotIn("Traceback", log.output)
        case.assertIn("Database unavailable as a connection went back to "
                      "the pool (replaced): (1047", log.output)
        case.assertNotEqual(backend, self.backend())


class PostgreSQLKeptIdlePing(_KeptIdlePing, testtools.TestCase):
    kind = "postgresql"


class MariaDBKeptIdlePing(_KeptIdlePing, testtools.TestCase):
    kind = "mysql"
