"""``Database.statement_connection``: a poll's one statement is its own
transaction, and the connection goes back to the pool as it came.

On SQLite no ``BEGIN`` is sent (SQLite's own connection says no
transaction is open); on PostgreSQL the connection is in
autocommit for the block only (a later transaction on the same pooled
connection is a transaction again); MariaDB keeps its implicit
transaction.  Each class runs on a scratch database of its kind.
"""

from __future__ import annotations

from typing import Any, ClassVar

import testtools
from sqlalchemy import event, text

from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.tests.functional.multiprocess import _databases


class _StatementConnection:
    kind: ClassVar[str]
    db: Database
    sent: list[str]

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        scratch = _databases.ScratchDatabase(self.kind)
        self.addCleanup(scratch.drop)  # type: ignore[attr-defined]
        # One pooled connection: every block below gets the same one.
        self.db = Database(scratch.url, max_connections=1)
        self.addCleanup(self.db.dispose)  # type: ignore[attr-defined]
        self.db.upgrade()
        self.sent = []

        @event.listens_for(self.db.engine, "before_cursor_execute")
        def _sent(_conn: Any, _cursor: Any, statement: str,
                  *_args: Any) -> None:
            self.sent.append(statement.split()[0].upper())

    def autocommit(self, conn: Any) -> bool | None:
        """The DB-API connection's autocommit flag, where it has one
        (psycopg; SQLite: whether no transaction is open), else None."""
        dbapi_connection = conn.connection.dbapi_connection
        if self.kind == "sqlite":
            return not dbapi_connection.in_transaction
        flag = getattr(dbapi_connection, "autocommit", None)
        return flag if isinstance(flag, bool) else None

    def test_the_statement_is_its_own_transaction(self) -> None:
        test: Any = self
        with self.db.read_connection() as conn:
            conn.execute(text("SELECT count(*) FROM allocations"))
            in_transaction = self.autocommit(conn)
        self.sent.clear()
        with self.db.statement_connection() as conn:
            conn.execute(text("SELECT count(*) FROM allocations"))
            in_statement = self.autocommit(conn)
        alone = list(self.sent)
        self.sent.clear()
        with self.db.read_connection() as conn:
            conn.execute(text("SELECT count(*) FROM allocations"))
            again = self.autocommit(conn)
        if self.kind in ("sqlite", "postgresql"):  # SQLite: BEGIN sent?
            test.assertEqual((False, True, False),
                             (in_transaction, in_statement, again))
        else:
            test.assertEqual(in_transaction, in_statement)
            test.assertEqual(in_transaction, again)
        test.assertEqual(["SELECT"], alone)


class SQLiteStatementConnection(_StatementConnection, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLStatementConnection(_StatementConnection,
                                   testtools.TestCase):
    kind = "postgresql"


class MariaDBStatementConnection(_StatementConnection, testtools.TestCase):
    kind = "mysql"
