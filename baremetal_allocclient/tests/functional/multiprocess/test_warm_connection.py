"""The pooled connection returned last is handed out next.

A request's transactions follow one another (a create stores its row,
reads a candidate window and reserves a node), and each takes a pooled
connection.  Handing out the connection returned last keeps them on one
warm connection: SQLite drops a connection's page cache whenever
another connection wrote, PostgreSQL's prepared statements belong to
one connection, and a connection used a moment ago is not pinged
(``PING_AFTER_IDLE``).  Each class runs on a scratch database of its
kind.
"""

from __future__ import annotations

from typing import Any

import testtools

from baremetal_allocclient.tests.functional.multiprocess import _databases


class _WarmConnection(_databases.MigratedPerClass):
    @staticmethod
    def driver_connection(conn: Any) -> Any:
        return conn.connection.dbapi_connection

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


class SQLiteWarmConnection(_WarmConnection, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLWarmConnection(_WarmConnection, testtools.TestCase):
    kind = "postgresql"


class MySQLWarmConnection(_WarmConnection, testtools.TestCase):
    kind = "mysql"
