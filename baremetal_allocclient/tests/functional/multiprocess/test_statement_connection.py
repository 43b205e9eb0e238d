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

import testtools
from sqlalchemy import func, select

from baremetal_allocclient.server.db.driver_statements import driver_statement
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Allocation
from baremetal_allocclient.tests.fixtures import databases


class _StatementConnection:
    kind: ClassVar[str]
    db: Database

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        scratch = databases.scratch(
            self.addCleanup, self.kind)  # type: ignore[attr-defined]
        # One pooled connection: every block below gets the same one.
        self.db = Database(scratch.url, max_connections=1)
        self.addCleanup(self.db.dispose)  # type: ignore[attr-defined]
        self.db.upgrade()

    def in_transaction(self, dbapi_connection: Any) -> bool:
        """Whether the DB-API connection has a transaction open, as the
        driver knows it (SQLite's flag, psycopg's transaction status,
        the status MariaDB sent with its last answer, which shows a
        write's)."""
        if self.kind == "sqlite":
            return bool(dbapi_connection.in_transaction)
        if self.kind == "postgresql":
            import psycopg

            status = dbapi_connection.info.transaction_status
            return bool(status != psycopg.pq.TransactionStatus.IDLE)
        from pymysql.constants import SERVER_STATUS

        return bool(dbapi_connection.server_status
                    & SERVER_STATUS.SERVER_STATUS_IN_TRANS)

    def test_the_statement_is_its_own_transaction(self) -> None:
        """A block's read leaves a transaction open only where the block
        is one, and the connection goes back to the pool with none."""
        test: Any = self
        blocks = (self.db.read_connection, self.db.statement_connection,
                  self.db.write_connection, self.db.read_connection)
        after_read, returned = [], []
        for block in blocks:
            with block() as conn:
                count(conn)
                after_read.append(
                    self.in_transaction(conn.connection.dbapi_connection))
            pooled = self.db.engine.raw_connection()  # the same one
            returned.append(self.in_transaction(pooled.dbapi_connection))
            pooled.close()
        test.assertEqual([False] * 4, returned)
        if self.kind != "mysql":  # (MariaDB keeps its implicit one, and
            # pymysql's status does not show a read's transaction)
            test.assertEqual([True, False, True, True], after_read)


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
