"""``Database.statement_connection``: a poll's one statement is its own
transaction, and the connection goes back to the pool as it came.

On SQLite no ``BEGIN`` is sent (SQLite's own connection says no
transaction is open); on PostgreSQL the connection is in
autocommit for the block only (a later transaction on the same pooled
connection, SQLAlchemy's or the driver's, is a transaction again, as
psycopg's connection says); MariaDB keeps its implicit transaction.
Each class runs on a scratch database of its kind.
"""

from __future__ import annotations

from typing import Any, ClassVar

import psycopg
import testtools
from sqlalchemy import func, select

from baremetal_allocclient.server.db.driver_statements import driver_statement
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Allocation
from baremetal_allocclient.tests.functional.multiprocess import _databases


class _StatementConnection:
    kind: ClassVar[str]
    db: Database

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        scratch = _databases.ScratchDatabase(self.kind)
        self.addCleanup(scratch.drop)  # type: ignore[attr-defined]
        # One pooled connection: every block below gets the same one.
        self.db = Database(scratch.url, max_connections=1)
        self.addCleanup(self.db.dispose)  # type: ignore[attr-defined]
        self.db.upgrade()

    def in_transaction(self, conn: Any) -> bool | None:
        """Whether the DB-API connection has a transaction open after
        its statement (SQLite's and psycopg's say; else None)."""
        dbapi_connection = conn.connection.dbapi_connection
        if self.kind == "sqlite":
            return bool(dbapi_connection.in_transaction)
        if self.kind == "postgresql":
            status = dbapi_connection.info.transaction_status
            return status != psycopg.pq.TransactionStatus.IDLE
        return None

    def test_the_statement_is_its_own_transaction(self) -> None:
        test: Any = self
        with self.db.read_connection() as conn:
            count(conn)
            in_transaction = self.in_transaction(conn)
        with self.db.statement_connection() as conn:
            count(conn)
            in_statement = self.in_transaction(conn)
        with self.db.write_connection() as conn:
            count(conn)
            in_write = self.in_transaction(conn)
        with self.db.read_connection() as conn:
            count(conn)
            again = self.in_transaction(conn)
        if self.kind in ("sqlite", "postgresql"):
            test.assertEqual((True, False, True, True),
                             (in_transaction, in_statement, in_write, again))


#: A read of each kind of block.
_COUNT = select(func.count()).select_from(Allocation)


def count(conn: Any) -> int:
    return int(driver_statement(_COUNT, conn.dialect).rows(conn, {})[0][0])


class SQLiteStatementConnection(_StatementConnection, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLStatementConnection(_StatementConnection,
                                   testtools.TestCase):
    kind = "postgresql"


class MariaDBStatementConnection(_StatementConnection, testtools.TestCase):
    kind = "mysql"
