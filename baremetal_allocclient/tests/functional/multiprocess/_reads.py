"""What a statement reads, as the database itself counts it.

SQLite: the virtual machine's steps (in tens, from a progress handler);
PostgreSQL: the rows its scans returned or fetched in the current
transaction (``pg_stat_xact_user_tables``); MariaDB: the session's
``Handler_read_*`` counters.  For tests that a read costs what it needs,
not what the tables hold.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import text

from baremetal_allocclient.server.db.engine import Database

#: Runs of a read before the one counted.
PREPARED_AFTER = 8


def analyze(db: Database, kind: str) -> None:
    """Bring PostgreSQL's and MariaDB's statistics up to date, as
    autovacuum and InnoDB keep them on a running database; SQLite has
    none, as the server never runs ``ANALYZE``."""
    if kind == "sqlite":
        return
    statement = {"postgresql": "ANALYZE",
                 "mysql": "ANALYZE TABLE nodes, allocations"}[kind]
    with db.engine.connect() as conn:
        conn.execute(text(statement))
        conn.commit()


class Reads:
    """Rows (or steps) the database reports reading, on ``conn`` (in a
    transaction: PostgreSQL counts per transaction)."""

    def __init__(self, kind: str, conn: Any) -> None:
        self.kind = kind
        self.conn = conn
        self.steps = 0

    def count(self) -> int:
        if self.kind == "sqlite":
            return self.steps
        if self.kind == "postgresql":
            row = self.conn.execute(text(
                "SELECT sum(coalesce(seq_tup_read, 0) "
                "+ coalesce(idx_tup_fetch, 0)) "
                "FROM pg_stat_xact_user_tables")).first()
            return int(row[0] or 0) if row else 0
        rows = self.conn.execute(text(
            "SHOW SESSION STATUS LIKE 'Handler_read%'")).all()
        return sum(int(value) for _name, value in rows)

    def of(self, read: Callable[[], object]) -> int:
        """What ``read()`` read, once it ran :data:`PREPARED_AFTER`
        times: past the driver's prepare threshold (psycopg prepares a
        statement on its fifth run, and PostgreSQL may then plan it once
        for any values of its parameters)."""
        for _ in range(PREPARED_AFTER):
            read()
        if self.kind == "sqlite":
            raw = self.conn.connection.dbapi_connection
            raw.set_progress_handler(self._step, 10)
            try:
                read()
            finally:
                raw.set_progress_handler(None, 10)
            steps, self.steps = self.steps, 0
            return steps
        before = self.count()
        read()
        return self.count() - before

    def _step(self) -> int:
        self.steps += 1
        return 0  # go on
