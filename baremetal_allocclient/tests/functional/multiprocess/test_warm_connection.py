"""The pooled connection returned last is handed out next, and the
driver's blocks hand theirs to the next block without the pool.

A request's transactions follow one another (a create stores its row,
reads a candidate window and reserves a node), and each takes a pooled
connection.  Handing out the connection returned last keeps them on one
warm connection: SQLite drops a connection's page cache whenever
another connection wrote, PostgreSQL's prepared statements belong to
one connection, and a connection used a moment ago is not pinged
(``PING_AFTER_IDLE``).  The driver's blocks (a create's transactions, a
poll's read) do not even give their connection back to the pool: the
next block takes it where the last one left it (``KeptConnection``),
one connection at most and never the pool's last.  Each class runs on
a scratch database of its kind, with a new pool for each test.
``test_idle_ping`` checks that a kept connection is handed out as the
pool would hand it out (pinged after sitting idle, dropped when the
pool found one lost).
"""

from __future__ import annotations

import threading
from typing import Any

import testtools
from sqlalchemy import event

from baremetal_allocclient.tests.fixtures import databases


class _WarmConnection(databases.MigratedPerClass):
    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        self.db.dispose()  # a new pool, nothing kept

    @staticmethod
    def driver_connection(conn: Any) -> Any:
        return conn.connection.dbapi_connection

    def checkouts_during(self, work: Any) -> int:
        """How many connections the pool handed out while ``work()`` ran."""
        counted = []
        listener = lambda *_args: counted.append(1)  # noqa: E731
        event.listen(self.db.engine, "checkout", listener)
        try:
            work()
        finally:
            event.remove(self.db.engine, "checkout", listener)
        return len(counted)

    def test_the_connection_returned_last_serves_the_next_block(self
                                                                ) -> None:
        test: Any = self
        blocks = [self.db.read_connection() for _ in range(3)]
        conns = [block.__enter__() for block in blocks]
        taken = [self.driver_connection(conn) for conn in conns]
        for block in blocks:  # given back first to last
            block.__exit__(None, None, None)
        test.assertEqual(3, len({id(conn) for conn in taken}))
        with self.db.statement_connection() as conn:
            next_read = self.driver_connection(conn)
        with self.db.write_connection() as conn:
            next_write = self.driver_connection(conn)
        test.assertIs(taken[-1], next_read)
        test.assertIs(taken[-1], next_write)

    def test_the_driver_blocks_go_on_without_the_pool(self) -> None:
        test: Any = self

        def blocks() -> None:
            for _ in range(5):
                with self.db.write_connection():
                    pass
                with self.db.statement_connection():
                    pass

        blocks()  # a connection is kept from here on
        test.assertEqual(0, self.checkouts_during(blocks))
        # Any other block still takes the pool's (the kept one stays).
        test.assertEqual(1, self.checkouts_during(
            lambda: self.db.read_connection().__enter__().close()))

    def test_one_connection_is_kept_at_most(self) -> None:
        test: Any = self
        pool: Any = self.db.engine.pool
        outer = self.db.statement_connection()
        outer.__enter__()
        with self.db.write_connection():  # another connection, meanwhile
            pass
        outer.__exit__(None, None, None)  # one is kept already
        test.assertEqual(1, pool.checkedout())
        self.db.dispose()  # gives the kept one back first
        test.assertEqual(0, pool.checkedout())

    def test_the_pools_last_connection_is_not_kept(self) -> None:
        """With every other connection in use, a driver block gives its
        connection back to the pool: a thread waiting there gets it."""
        test: Any = self
        pool: Any = self.db.engine.pool
        held = [self.db.engine.raw_connection()
                for _ in range(pool.size() - 1)]
        with self.db.statement_connection():
            test.assertEqual(pool.size(), pool.checkedout())
        test.assertEqual(pool.size() - 1, pool.checkedout())
        waiting = threading.Thread(
            target=lambda: held.append(self.db.engine.raw_connection()))
        waiting.start()
        waiting.join(timeout=5)  # the pool's timeout is 10 s
        test.assertFalse(waiting.is_alive())
        for conn in held:
            conn.close()
        with self.db.statement_connection():
            pass
        test.assertEqual(1, pool.checkedout())  # kept again


class SQLiteWarmConnection(_WarmConnection, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLWarmConnection(_WarmConnection, testtools.TestCase):
    kind = "postgresql"


class MySQLWarmConnection(_WarmConnection, testtools.TestCase):
    kind = "mysql"
