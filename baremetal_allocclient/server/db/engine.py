"""Database engine and transactions.

Every write goes through :meth:`Database.write`.  On SQLite that means an
in-process lock plus ``BEGIN IMMEDIATE``: the write lock is taken when the
transaction starts, so no transaction ever has to upgrade a read lock to a
write lock (the cause of "database is locked" errors that busy_timeout
cannot help with), and threads of this process queue on a Python lock
instead of spinning on SQLite's busy handler.  Other processes sharing the
file wait on ``busy_timeout``.  On PostgreSQL and MariaDB the lock is not
used; correctness rests on the compare-and-set updates in ``queries.py``.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import (
    DBAPIError,
    InterfaceError,
    OperationalError,
)
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session

_MIGRATIONS = os.path.join(os.path.dirname(__file__), "migrations")


def head_revision() -> str:
    """The newest schema revision this code knows."""
    head = ScriptDirectory(_MIGRATIONS).get_current_head()
    assert head is not None
    return head
SQLITE_BUSY_TIMEOUT_MS = 60_000
CONNECT_TIMEOUT = 5  # seconds, PostgreSQL and MariaDB
#: Default connection caps per process.  SQLite connections are cheap and
#: writes queue on the process's lock anyway; a database server's are
#: shared by every process (see ``serve --db-connections``).
SQLITE_CONNECTIONS = 64
SERVER_CONNECTIONS = 16
# Session.info key marking write transactions: rows they read are locked
# (SELECT ... FOR UPDATE on PostgreSQL/MariaDB; SQLite holds the write
# lock for the whole transaction anyway).
WRITE = "baremetal_allocclient.write"


# Deadlock / serialization failure (PostgreSQL SQLSTATE) and deadlock /
# lock wait timeout (MySQL/MariaDB error numbers).
_TRANSIENT_SQLSTATES = frozenset({"40P01", "40001"})
_TRANSIENT_MYSQL_ERRORS = frozenset({1213, 1205})


def is_transient(exc: DBAPIError) -> bool:
    """True for errors a retry of the whole transaction would resolve."""
    orig = exc.orig
    if getattr(orig, "sqlstate", None) in _TRANSIENT_SQLSTATES:
        return True
    args: tuple[object, ...] = tuple(getattr(orig, "args", ()))
    return bool(args) and args[0] in _TRANSIENT_MYSQL_ERRORS


def is_unavailable(exc: BaseException) -> bool:
    """True when the database could not be reached or dropped the
    connection (restart, network cut, no free pooled connection).

    Such a failure says nothing about the request: it left nothing
    behind and may succeed later, so the API answers 503 and workers
    leave their allocation ``allocating`` for a later attempt.
    """
    if isinstance(exc, PoolTimeout):
        return True
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    return isinstance(exc, (OperationalError, InterfaceError)) and (
        not is_transient(exc)
    )


def short_reason(exc: BaseException) -> str:
    """The first line of the driver's message, for one-line log entries
    (without the SQL statement and SQLAlchemy's background link)."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class SchemaOutOfDate(Exception):
    """The database schema is older than this code (or missing)."""


def _sqlite_tuning(engine: Engine) -> None:
    """WAL, busy timeout, foreign keys and explicit BEGIN handling."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy (the "begin" hook below) issue BEGIN itself.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA journal_mode = WAL")
        cur.execute("PRAGMA synchronous = NORMAL")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        immediate = conn.info.get("immediate", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


class Database:
    """Owns the engine and hands out read and write transactions."""

    def __init__(self, url: str, max_connections: int | None = None) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        if max_connections is None:
            max_connections = (
                SQLITE_CONNECTIONS if self.is_sqlite else SERVER_CONNECTIONS
            )
        # A hard cap, no overflow: several processes share one database
        # server whose connection limit (PostgreSQL's max_connections,
        # 100 by default) must hold for all of them together.  Threads
        # beyond the cap wait for a pooled connection (milliseconds under
        # load) instead of being refused by the database.
        kwargs: dict[str, Any] = {
            "pool_pre_ping": not self.is_sqlite,
            "pool_size": max_connections,
            "max_overflow": 0,
            # A request must not hang for minutes while the database is
            # unreachable: fail fast and answer 503.
            "pool_timeout": 10,
        }
        if url.startswith("postgresql"):
            # Keepalives notice a silently vanished server (network cut)
            # in ~25 s instead of the kernel's TCP timeout (minutes).
            kwargs["connect_args"] = {
                "connect_timeout": CONNECT_TIMEOUT,
                "keepalives": 1,
                "keepalives_idle": 10,
                "keepalives_interval": 5,
                "keepalives_count": 3,
            }
        elif url.startswith(("mysql", "mariadb")):
            # Above InnoDB's default 50 s lock wait, below TCP's timeout.
            kwargs["connect_args"] = {
                "connect_timeout": CONNECT_TIMEOUT,
                "read_timeout": 90,
                "write_timeout": 90,
            }
        if self.is_sqlite:
            kwargs["connect_args"] = {
                "check_same_thread": False,
                "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000,
            }
        self.engine = create_engine(url, **kwargs)
        if self.is_sqlite:
            _sqlite_tuning(self.engine)
        self._write_lock = threading.Lock()

    @contextlib.contextmanager
    def read(self) -> Iterator[Session]:
        """A short read-only transaction."""
        with (
            Session(self.engine, expire_on_commit=False) as session,
            session.begin(),
        ):
            yield session

    @contextlib.contextmanager
    def write(self) -> Iterator[Session]:
        """A write transaction that cannot fail with "database is locked"."""
        if not self.is_sqlite:
            with (
                Session(self.engine, expire_on_commit=False) as session,
                session.begin(),
            ):
                session.info[WRITE] = True
                yield session
            return
        with self._write_lock, self.engine.connect() as conn:
            conn.info["immediate"] = True
            try:
                with (
                    Session(bind=conn, expire_on_commit=False) as session,
                    session.begin(),
                ):
                    session.info[WRITE] = True
                    yield session
            finally:
                conn.info.pop("immediate", None)

    def dispose(self) -> None:
        """Close pooled connections."""
        self.engine.dispose()

    # -- schema --------------------------------------------------------
    def _alembic_config(self, conn: Connection) -> Config:
        cfg = Config()
        cfg.set_main_option("script_location", _MIGRATIONS)
        cfg.attributes["connection"] = conn
        return cfg

    def upgrade(self) -> None:
        """Bring the schema to the newest revision (idempotent)."""
        with self._write_lock, self.engine.begin() as conn:
            command.upgrade(self._alembic_config(conn), "head")

    def schema_revisions(self) -> tuple[str | None, str]:
        """(current revision of the database, newest known revision)."""
        with self.engine.connect() as conn:
            current = MigrationContext.configure(conn).get_current_revision()
        return current, head_revision()

    def check_schema(self) -> None:
        """Raise SchemaOutOfDate unless the database is at the head."""
        current, head = self.schema_revisions()
        if current != head:
            raise SchemaOutOfDate(
                f"database schema is at revision {current or 'none'} but "
                f"this server needs {head}; run "
                f"'baremetal-alloc-server db upgrade --db URL' or start "
                f"'serve' with --upgrade"
            )
