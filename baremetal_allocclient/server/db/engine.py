"""Database engine and transactions.

Every write goes through :meth:`Database.write`.  On SQLite that means an
in-process lock plus ``BEGIN IMMEDIATE``: the write lock is taken when the
transaction starts, so no transaction ever has to upgrade a read lock to a
write lock (the cause of "database is locked" errors that busy_timeout
cannot help with), and threads of this process queue on a Python lock
instead of spinning on SQLite's busy handler.  Other processes sharing the
file wait on ``busy_timeout``.  On PostgreSQL and MariaDB the lock is not
used; correctness rests on the compare-and-set updates in
``allocation/reservation.py``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import (
    DataError,
    DBAPIError,
    DisconnectionError,
    IntegrityError,
    InterfaceError,
    OperationalError,
)
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session

from baremetal_allocclient.server.db import sqlalchemy_private
from baremetal_allocclient.server.db.driver_statements import (
    KEPT_AT,
    AnyConnection,
    DriverConnection,
    KeptConnection,
    driver_statement,
)

LOG = logging.getLogger(__name__)

#: The alembic script directory.
MIGRATIONS = os.path.join(os.path.dirname(__file__), "migrations")


def head_revision() -> str:
    """The newest schema revision this code knows."""
    head = ScriptDirectory(MIGRATIONS).get_current_head()
    assert head is not None
    return head
SQLITE_BUSY_TIMEOUT_MS = 60_000
CONNECT_TIMEOUT = 5  # seconds, PostgreSQL and MariaDB
#: Longest wait for a row lock (PostgreSQL and MariaDB), in seconds: a
#: longer wait fails as a transient error (retried, or the node counts as
#: taken), so no request or worker queues for long behind a row that a
#: stalled process holds.
LOCK_WAIT_TIMEOUT = 5
#: A transaction idle this long (its process frozen, say) is ended by the
#: database server, releasing its row locks; the process finds its
#: connection gone when it wakes and retries under the usual guards.
IDLE_IN_TRANSACTION_TIMEOUT = 30
#: Default connection caps per process.  SQLite connections are cheap and
#: writes queue on the process's lock anyway; a database server's are
#: shared by every process (see ``serve --db-connections``).
SQLITE_CONNECTIONS = 64
SERVER_CONNECTIONS = 16
#: A pooled connection handed out again within this many seconds of its
#: return is not pinged first (PostgreSQL and MariaDB; HikariCP's "alive
#: bypass window", 0.5 s there too): a busy server would otherwise pay a
#: round trip per checkout for nothing, and a connection that died that
#: recently fails its first statement (the pool then replaces all of its
#: connections; a read is run again, see ``app._call_with_retries``).
PING_AFTER_IDLE = 0.5
_RETURNED = "baremetal_alloc_returned"
# Session.info key marking write transactions: rows they read are locked
# (SELECT ... FOR UPDATE on PostgreSQL/MariaDB; SQLite holds the write
# lock for the whole transaction anyway).
WRITE = "baremetal_allocclient.write"


# Deadlock / serialization failure / lock not available (PostgreSQL
# SQLSTATE) and deadlock / lock wait timeout (MySQL/MariaDB error
# numbers).  On a Galera cluster 1213 is also a certification conflict
# reported at COMMIT: a transaction of another node wrote the same rows
# first (Galera does not replicate row locks, so FOR UPDATE excludes only
# the transactions of the same node).
_TRANSIENT_SQLSTATES = frozenset({"40P01", "40001", "55P03"})
_TRANSIENT_MYSQL_ERRORS = frozenset({1213, 1205})
# The database is out of reach, not the request at fault: connection
# exceptions (class 08), shutdown, start-up, too many connections.
_UNAVAILABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300"})
# MySQL/MariaDB: too many connections, shutdown in progress, aborted or
# killed connection, network read/write errors, client-side connection
# failures (2002-2055) and pymysql's 0 for a connection already closed.
# Galera: 1047 "WSREP has not yet prepared node for application use" (a
# node out of the Primary component, joining, or shutting down) and
# 1180 "Got error ... during COMMIT" (the commit could not be replicated).
_UNAVAILABLE_MYSQL_ERRORS = frozenset({
    0, 1040, 1047, 1053, 1077, 1152, 1153, 1154, 1155, 1156, 1157, 1158,
    1159, 1160, 1161, 1180, 1927, 2002, 2003, 2005, 2006, 2011, 2013,
    2048, 2055, 4031,
})
# SQLite primary result codes: BUSY, LOCKED, IOERR, FULL, CANTOPEN,
# PROTOCOL; and their messages, for Python 3.10 (no sqlite_errorcode).
_UNAVAILABLE_SQLITE_CODES = frozenset({5, 6, 10, 13, 14, 15})
_UNAVAILABLE_SQLITE_MESSAGES = (
    "database is locked", "database table is locked", "disk I/O error",
    "database or disk is full", "unable to open database file",
    "locking protocol",
)
# MySQL/MariaDB: a value the column or its JSON check refuses.
_DATA_MYSQL_ERRORS = frozenset({
    1264, 1265, 1292, 1366, 1367, 1406, 3140, 4025, 4038,
})


def _mysql_code(exc: DBAPIError) -> object:
    args: tuple[object, ...] = tuple(getattr(exc.orig, "args", ()))
    return args[0] if args else None


def is_transient(exc: DBAPIError) -> bool:
    """True for errors a retry of the whole transaction would resolve."""
    orig = exc.orig
    if getattr(orig, "sqlstate", None) in _TRANSIENT_SQLSTATES:
        return True
    return _mysql_code(exc) in _TRANSIENT_MYSQL_ERRORS


def is_lost_race(exc: BaseException) -> bool:
    """True when a concurrent transaction won: a deadlock, a lock wait
    timeout or (Galera) a certification conflict at COMMIT.  Nothing of
    the transaction was committed; a compare-and-set that gets this lost
    its race exactly as if it had found the row changed."""
    return isinstance(exc, DBAPIError) and is_transient(exc)


def _lost_connection(exc: DBAPIError) -> bool:
    """The driver's own code says the server is out of reach (pure)."""
    orig = exc.orig
    if type(orig).__module__ == "sqlite3":
        sqlite_code = getattr(orig, "sqlite_errorcode", None)
        if isinstance(sqlite_code, int):
            return sqlite_code & 0xFF in _UNAVAILABLE_SQLITE_CODES
        return str(orig).startswith(_UNAVAILABLE_SQLITE_MESSAGES)
    code = _mysql_code(exc)
    if isinstance(code, int) and type(orig).__module__.startswith(
        "pymysql"
    ):
        return code in _UNAVAILABLE_MYSQL_ERRORS
    if type(orig).__module__.startswith("psycopg"):
        sqlstate = getattr(orig, "sqlstate", None)
        if sqlstate is None:  # failed before the server answered
            return True
        return sqlstate.startswith("08") or (
            sqlstate in _UNAVAILABLE_SQLSTATES
        )
    return False


def is_unavailable(exc: BaseException) -> bool:
    """True when the database could not be reached or dropped the
    connection (restart, network cut, no free pooled connection).

    Such a failure says nothing about the request and may succeed later,
    so workers leave their allocation ``allocating`` for a later attempt
    (their compare-and-sets make a repeated step harmless), and the API
    answers 503: "changed nothing" when it left nothing behind, "may or
    may not" after a :class:`CommitOutcomeUnknown` it could not resolve.
    Only connection-level codes count: any other error of the database is
    a fault of the request or of this server and is never retried.
    """
    if isinstance(exc, (PoolTimeout, CommitOutcomeUnknown)):
        return True
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    return isinstance(exc, (OperationalError, InterfaceError)) and (
        _lost_connection(exc)
    )


def is_bad_data(exc: BaseException) -> bool:
    """True when the database refused a value (too long, out of range,
    not valid JSON, not encodable): the request's fault, a 400."""
    if isinstance(exc, DataError):
        return True
    if not isinstance(exc, DBAPIError):
        return False
    orig = exc.orig
    if type(orig).__module__.startswith("pymysql"):
        return _mysql_code(exc) in _DATA_MYSQL_ERRORS
    sqlstate = getattr(orig, "sqlstate", None)
    return isinstance(sqlstate, str) and sqlstate.startswith("22")


@contextlib.contextmanager
def duplicates_refused(error: Callable[[], Exception]) -> Iterator[None]:
    """Raise ``error()`` (from None) instead of a uniqueness violation
    inside the block: the insert that lost a race against a concurrent
    one with the same unique value."""
    try:
        yield
    except IntegrityError:
        raise error() from None


def short_reason(exc: BaseException) -> str:
    """The first line of the driver's message, for one-line log entries
    (without the SQL statement and SQLAlchemy's background link)."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class CommitOutcomeUnknown(Exception):
    """The database became unreachable once the transaction's work was
    done, while it was being committed: it may or may not have been
    committed.  Only reading the database again can tell."""


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
        begin = _BEGIN[bool(conn.info.get("immediate", False))]
        driver_statement(begin, conn.dialect).rowcount(conn, {})


#: SQLite's BEGIN, immediate (a write) or not.
_BEGIN = {True: text("BEGIN IMMEDIATE"), False: text("BEGIN")}


def _ping_when_idle(engine: Engine) -> None:
    """Ping a pooled connection before handing it out, but only when it
    sat in the pool :data:`PING_AFTER_IDLE` seconds or more; a dead one
    is replaced (``DisconnectionError`` makes the pool reconnect)."""
    dialect = engine.dialect

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_conn: Any, record: Any) -> None:
        # (A connection kept for the driver's blocks was last used when
        # it was kept.)
        record.info[_RETURNED] = record.info.pop(KEPT_AT, None) \
            or time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        returned = record.info.get(_RETURNED)
        if returned is None or time.monotonic() - returned < PING_AFTER_IDLE:
            return  # just connected, or in use a moment ago
        try:
            dialect.do_ping(dbapi_conn)
        except dialect.loaded_dbapi.Error as exc:
            if dialect.is_disconnect(exc, dbapi_conn, None):
                raise DisconnectionError(short_reason(exc)) from exc
            raise


def _rollback_on_return(engine: Engine) -> None:
    """What the pool does to a connection given back without its
    transaction ended by the caller (SQLAlchemy's ``reset_on_return``,
    turned off in :class:`Database`): roll back.  A connection found lost
    then, or refused by an unavailable database (:func:`is_unavailable`: a
    Galera node out of the Primary Component, say), is invalidated, so
    that its next checkout connects afresh, with one warning line as for
    any lost connection, instead of SQLAlchemy's error with a traceback."""
    dialect = engine.dialect

    @event.listens_for(engine, "reset")
    def _on_reset(dbapi_conn: Any, record: Any, state: Any) -> None:
        if state.transaction_was_reset:
            return
        try:
            dialect.do_rollback(dbapi_conn)
        except dialect.loaded_dbapi.Error as exc:
            if not (dialect.is_disconnect(exc, dbapi_conn, None)
                    or is_unavailable(DBAPIError.instance(
                        None, None, exc, dialect.loaded_dbapi.Error,
                        dialect=dialect))):
                raise
            LOG.warning("Database unavailable as a connection went back to "
                        "the pool (replaced): %s", short_reason(exc))
            record.invalidate(exc)


def _mariadb_idle_timeout(engine: Engine) -> None:
    """MariaDB's ``idle_transaction_timeout`` (MySQL has none)."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        try:
            cur.execute("SELECT VERSION()")
            (version,) = cur.fetchone()
            if "mariadb" in str(version).lower():
                cur.execute(
                    f"SET SESSION idle_transaction_timeout = "
                    f"{IDLE_IN_TRANSACTION_TIMEOUT}"
                )
        finally:
            cur.close()


_T = TypeVar("_T")


@contextlib.contextmanager
def _commit_outcome_reported(
        transaction: contextlib.AbstractContextManager[_T]) -> Iterator[_T]:
    """Run ``transaction``; a connection lost while it commits raises
    :class:`CommitOutcomeUnknown` (the commit may or may not have been
    applied), any other error as it is."""
    committing = False
    try:
        with transaction as value:
            yield value
            committing = True
    except DBAPIError as exc:
        unknown = _unknown_outcome(exc) if committing else None
        if unknown is None:
            raise
        raise unknown from exc


def _unknown_outcome(exc: DBAPIError) -> CommitOutcomeUnknown | None:
    """A commit that failed with ``exc``: of unknown outcome when the
    connection was lost (it may or may not have been applied), None
    when the database refused it."""
    if is_unavailable(exc):
        return CommitOutcomeUnknown(short_reason(exc))
    return None


@contextlib.contextmanager
def _session_transaction(bind: Engine | Connection) -> Iterator[Session]:
    """An ORM session in one transaction, committed when the block ends."""
    with (
        Session(bind, expire_on_commit=False) as session,
        session.begin(),
    ):
        yield session


def _set_autocommit(conn: DriverConnection, on: bool) -> None:
    """psycopg's autocommit flag; a connection that refuses it is lost:
    invalidated, and reported as SQLAlchemy reports a lost one."""
    dbapi = conn.dialect.loaded_dbapi
    try:
        conn.connection.dbapi_connection.autocommit = on  # type: ignore
    except dbapi.Error as exc:
        error = DBAPIError.instance(None, None, exc, dbapi.Error,
                                    connection_invalidated=True,
                                    dialect=conn.dialect)
        conn.invalidate(error)
        raise error from exc


#: The JSON text of the empty list and object, by type.
_EMPTY_JSON: dict[type, str] = {list: "[]", dict: "{}"}


def json_text(value: Any) -> str:
    """The JSON text a JSON column stores for ``value``: ``json.dumps``,
    without calling it for an empty list or object (what most
    allocations have as traits, candidate nodes and extra)."""
    if not value:
        empty = _EMPTY_JSON.get(type(value))
        if empty is not None:
            return empty
    return str(json.dumps(value))


class _StatementConnection:
    """The block of :meth:`Database.statement_connection` (a class, not
    a generator: a poll and a create open one)."""

    __slots__ = ("_autocommit", "_conn", "_db")

    def __init__(self, db: Database) -> None:
        self._db = db

    def __enter__(self) -> DriverConnection:
        db = self._db
        conn = DriverConnection(db.engine, transaction=False,
                                kept=db._kept)
        self._autocommit = db.engine.dialect.name == "postgresql"
        if self._autocommit:
            try:
                _set_autocommit(conn, True)
            except BaseException:
                self._end(conn)
                raise
        self._conn = conn
        return conn

    def __exit__(self, *_: Any) -> None:
        self._end(self._conn)

    def _end(self, conn: DriverConnection) -> None:
        try:
            if self._autocommit and conn.connection.is_valid:
                _set_autocommit(conn, False)
        except DBAPIError:
            pass  # invalidated: the pool replaces it
        conn.end(commit=False)


class _WriteConnection:
    """The block of :meth:`Database.write_connection`: a transaction on
    a :class:`DriverConnection`, committed when the block ends, rolled
    back when it raises.  (A class, not a generator: a create opens
    two.)"""

    __slots__ = ("_conn", "_db")

    def __init__(self, db: Database) -> None:
        self._db = db

    def __enter__(self) -> DriverConnection:
        db = self._db
        if not db.is_sqlite:
            self._conn = DriverConnection(db.engine, kept=db._kept)
            return self._conn
        db._write_lock.acquire()
        try:
            conn = DriverConnection(db.engine, kept=db._kept)
        except BaseException:
            db._write_lock.release()
            raise
        try:
            driver_statement(_BEGIN[True], conn.dialect).rowcount(conn, {})
        except BaseException:
            conn.end(commit=False)
            db._write_lock.release()
            raise
        self._conn = conn
        return conn

    def __exit__(self, kind: type[BaseException] | None, *_: Any) -> None:
        db = self._db
        try:
            if kind is not None:
                self._conn.end(commit=False)
                return
            try:
                self._conn.end(commit=True)
            except DBAPIError as exc:
                # (SQLite commits locally: a failed commit is rolled back)
                unknown = None if db.is_sqlite else _unknown_outcome(exc)
                if unknown is None:
                    raise
                raise unknown from exc
        finally:
            if db.is_sqlite:
                db._write_lock.release()


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
            "pool_size": max_connections,
            "max_overflow": 0,
            # A request must not hang for minutes while the database is
            # unreachable: fail fast and answer 503.
            "pool_timeout": 10,
            # The connection returned last is handed out next, so a
            # request's transactions in a row stay on one warm
            # connection: SQLite drops a connection's page cache when
            # another one wrote, and one used a moment ago is not
            # pinged (see ``PING_AFTER_IDLE``).
            "pool_use_lifo": True,
            # ``_rollback_on_return`` instead.
            "pool_reset_on_return": None,
            "json_serializer": json_text,
        }
        if url.startswith("postgresql"):
            # Keepalives notice a silently vanished server (network cut)
            # in ~25 s instead of the kernel's TCP timeout (minutes).
            kwargs["connect_args"] = {
                "connect_timeout": CONNECT_TIMEOUT,
                "options": (
                    f"-c lock_timeout={LOCK_WAIT_TIMEOUT * 1000} "
                    f"-c idle_in_transaction_session_timeout="
                    f"{IDLE_IN_TRANSACTION_TIMEOUT * 1000}"
                ),
                "keepalives": 1,
                "keepalives_idle": 10,
                "keepalives_interval": 5,
                "keepalives_count": 3,
            }
        elif url.startswith(("mysql", "mariadb")):
            # Well above the lock wait, below TCP's timeout.
            kwargs["connect_args"] = {
                "connect_timeout": CONNECT_TIMEOUT,
                "read_timeout": 90,
                "write_timeout": 90,
                "init_command": (
                    f"SET SESSION innodb_lock_wait_timeout = "
                    f"{LOCK_WAIT_TIMEOUT}"
                ),
            }
        if self.is_sqlite:
            kwargs["connect_args"] = {
                "check_same_thread": False,
                "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000,
            }
        self.engine = create_engine(url, **kwargs)
        _rollback_on_return(self.engine)
        if self.is_sqlite:
            _sqlite_tuning(self.engine)
        else:
            _ping_when_idle(self.engine)
        if url.startswith(("mysql", "mariadb")):
            _mariadb_idle_timeout(self.engine)
        self._write_lock = threading.Lock()
        #: The driver's blocks (a create's, a poll's) hand their
        #: connection to the next one instead of to the pool.
        self._kept = KeptConnection(
            self.engine, None if self.is_sqlite else PING_AFTER_IDLE)

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
        """A write transaction that cannot fail with "database is locked".

        On PostgreSQL and MariaDB a connection lost while committing
        raises :class:`CommitOutcomeUnknown` (SQLite commits locally: its
        failed commits are rolled back)."""
        if not self.is_sqlite:
            with _commit_outcome_reported(_session_transaction(self.engine)) \
                    as session:
                session.info[WRITE] = True
                yield session
            return
        with (
            self._immediate_connection() as conn,
            _session_transaction(conn) as session,
        ):
            session.info[WRITE] = True
            yield session

    @contextlib.contextmanager
    def _immediate_connection(self) -> Iterator[Connection]:
        """SQLite: a connection whose next transaction is ``BEGIN
        IMMEDIATE``, held under this process's write lock."""
        with self._write_lock, self.engine.connect() as conn:
            conn.info["immediate"] = True
            try:
                yield conn
            finally:
                conn.info.pop("immediate", None)

    @contextlib.contextmanager
    def read_connection(self) -> Iterator[Connection]:
        """:meth:`read` without the ORM session: a short transaction on a
        Core connection."""
        with self.engine.connect() as conn, conn.begin():
            yield conn

    def statement_connection(
            self) -> contextlib.AbstractContextManager[AnyConnection]:
        """A :class:`DriverConnection` for reads of
        ``db.driver_statements`` that need no snapshot across statements
        (the poll's one statement, a page of a list, the candidate
        window): each statement is its own transaction and reads one
        consistent snapshot on every database, so no ``BEGIN`` and no
        ``ROLLBACK`` are sent (on PostgreSQL the connection is in
        autocommit for the block, saving those two round trips).
        MariaDB keeps its implicit transaction, rolled back at the end:
        switching its autocommit costs a round trip each way.  Without
        SQLAlchemy's private pieces (``db.sqlalchemy_private``):
        :meth:`read_connection`, a SQLAlchemy ``Connection`` in a
        transaction."""
        if not sqlalchemy_private.USABLE:
            return self.read_connection()
        return _StatementConnection(self)

    def write_connection(
            self) -> contextlib.AbstractContextManager[AnyConnection]:
        """:meth:`write` for statements of ``db.driver_statements`` only
        (a create's): the same in-process lock and ``BEGIN IMMEDIATE`` on
        SQLite, the same :class:`CommitOutcomeUnknown` elsewhere, on a
        :class:`DriverConnection` (no ORM session, no SQLAlchemy
        ``Connection``); without SQLAlchemy's private pieces, on a
        SQLAlchemy ``Connection``."""
        if not sqlalchemy_private.USABLE:
            return self._public_write_connection()
        return _WriteConnection(self)

    @contextlib.contextmanager
    def _public_write_connection(self) -> Iterator[Connection]:
        """:meth:`write_connection` on SQLAlchemy's public API."""
        if not self.is_sqlite:
            with _commit_outcome_reported(self.engine.begin()) as conn:
                yield conn
            return
        with self._immediate_connection() as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        """Close pooled connections."""
        self._kept.close()
        self.engine.dispose()

    # -- schema --------------------------------------------------------
    def _alembic_config(self, conn: Connection) -> Config:
        cfg = Config()
        cfg.set_main_option("script_location", MIGRATIONS)
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
