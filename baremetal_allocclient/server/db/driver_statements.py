"""Statements compiled once, run on the database driver's own cursor.

A poll, a page of a list, a candidate window and the statements of a
reservation run for every request that waits on an allocation.  Around
the driver's work, SQLAlchemy's execution (its execution context, the
cursor's description, a ``Row`` per row) costs more than the work
itself.  A :class:`DriverStatement` keeps what SQLAlchemy compiled for
one dialect (the SQL, the order of its parameters, the conversions of
the values and columns that have one) and runs it on the DB-API cursor
of the caller's connection (a SQLAlchemy ``Connection``, or a
:class:`DriverConnection`), through the dialect's
``do_execute`` (as SQLAlchemy runs every statement).  A statement whose
parameters SQLAlchemy expands when it runs (an ``IN`` list's) is
expanded by the compiled statement's own step for it, as SQLAlchemy
does before it runs one.

Errors are SQLAlchemy's:

* a ``SELECT`` outside a transaction (a read on
  ``Database.statement_connection``) that the driver refused is run once
  more through SQLAlchemy (on a new connection from the pool, the
  refused one invalidated if it was lost), which raises its usual
  exception and, for a lost connection, invalidates the pool; a read
  changes nothing, so running it twice is harmless;
* anything else (a statement inside a transaction, where the database
  may have aborted it, or SQLite's ``BEGIN IMMEDIATE``, which must not
  wait for the write lock twice): the driver's exception is raised as
  the one SQLAlchemy raises for it (``DBAPIError.instance``), and a lost
  connection is invalidated, so the transaction's end and the callers'
  checks (``db.engine.is_unavailable``, ``is_transient``) see what they
  always see.

The write transactions of a create (``Database.write_connection``) and
the reads of one statement (``Database.statement_connection``) run on a
:class:`DriverConnection`: a pooled connection with no SQLAlchemy
``Connection`` around it, whose transaction is begun and ended through
the driver, as SQLAlchemy would (its ``Connection`` and transaction
objects, events and reset cost more than the ``BEGIN`` and ``COMMIT``).
Only statements of this module run on it.  Between two such blocks the
connection stays out of the pool (:class:`KeptConnection`).

Three methods used here are SQLAlchemy's own, not its public API, as
its ``Connection`` uses them (a lost connection, no second rollback,
``IN`` lists); they are called through ``db.sqlalchemy_private``, which
checks them.  Where that finds one missing or changed (or is told to
use the public API only), :data:`sqlalchemy_private.USABLE` is False,
``Database`` hands out SQLAlchemy ``Connection`` objects, and every
statement here runs through ``Connection.execute``
(:meth:`DriverStatement._through_sqlalchemy`).
"""

from __future__ import annotations

import collections
import functools
import operator
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, NoReturn, cast

from sqlalchemy import event
from sqlalchemy.engine import Connection, Dialect, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import PoolProxiedConnection
from sqlalchemy.sql import Executable

from baremetal_allocclient.server.db import sqlalchemy_private


class _Ran(NamedTuple):
    """What running a statement gave."""

    rows: list[tuple[Any, ...]]
    rowcount: int
    lastrowid: int | None


class DriverConnection:
    """A pooled connection in a transaction of the driver's (begun by
    its first statement, or by SQLite's ``BEGIN IMMEDIATE``), or with
    each statement its own (``transaction`` False): what
    :class:`DriverStatement` runs on, like a SQLAlchemy ``Connection``.
    :meth:`end` commits or rolls back and gives the connection back to
    the pool, or to ``kept`` for the next block (:class:`KeptConnection`)."""

    def __init__(self, engine: Engine, transaction: bool = True,
                 kept: KeptConnection | None = None) -> None:
        self.dialect = engine.dialect
        self.engine = engine
        self._pool = engine.pool
        self._kept = kept
        try:
            #: The pool's proxy of the DB-API connection (as a SQLAlchemy
            #: ``Connection.connection``).
            self.connection: PoolProxiedConnection = (
                engine.raw_connection() if kept is None else kept.take())
        except self.dialect.loaded_dbapi.Error as exc:
            raise _sqlalchemy_error(self.dialect, exc, None, None,
                                    self.dialect.is_disconnect(
                                        exc, None, None)) from exc
        #: False: each statement is its own transaction (the caller set
        #: the driver's autocommit where it has one).
        self._transaction = transaction

    def in_transaction(self) -> bool:
        return self._transaction

    def invalidate(self, error: BaseException) -> None:
        """A lost connection: discarded, and the rest of the pool
        checked before reuse (what SQLAlchemy does on a disconnect)."""
        sqlalchemy_private.invalidate_pool(self._pool, self.connection, error)

    def end(self, commit: bool) -> None:
        """Commit (or roll back) and give the connection back.  A failed
        commit raises SQLAlchemy's exception for it; a failed rollback
        (the transaction ends with its connection anyway) only
        invalidates the connection."""
        proxy = self.connection
        if not proxy.is_valid:  # lost, and invalidated, by a statement
            proxy.close()
            return
        try:  # as SQLAlchemy ends a transaction
            if commit:
                self.dialect.do_commit(proxy)
            else:
                self.dialect.do_rollback(proxy)
        except self.dialect.loaded_dbapi.Error as exc:
            lost = self.dialect.is_disconnect(exc, proxy.dbapi_connection,
                                              None)
            error = _sqlalchemy_error(self.dialect, exc, None, None, lost)
            if lost or not commit:
                self.invalidate(error)
            proxy.close()  # (rolled back by the pool unless invalidated)
            if commit:
                raise error from exc
            return
        if self._kept is not None:
            self._kept.give_back(proxy)
        else:
            checked_in(proxy)


def checked_in(proxy: PoolProxiedConnection) -> None:
    """Give a connection whose transaction has ended back to the pool.
    Ended by the caller: no rollback on the way back into the pool (a
    round trip on MariaDB), as for SQLAlchemy's own ``Connection``."""
    sqlalchemy_private.check_in_ended(proxy)


#: ``info`` key of a kept connection: when it was kept (``time.monotonic``);
#: checked in, it counts as returned to the pool then (``db.engine``).
KEPT_AT = "baremetal_alloc_kept_at"


class KeptConnection:
    """One pooled connection kept out of the pool between two
    :class:`DriverConnection` blocks, for the next one to take.

    Checking a connection out of SQLAlchemy's pool and back in (its
    record, proxy, weak reference, queue and events) costs a poll more
    than its statement on SQLite, and half as much as its statement on
    PostgreSQL (``doc/source/internals/benchmarks.rst``); a create has
    three blocks.  The connection a block ended with, its transaction over,
    is kept here instead, and the next block takes it (another thread's
    block meanwhile takes one from the pool).

    * At most one is kept, and never the pool's last: a connection given
      back while one is kept, or while the pool has none left to hand
      out, goes back to the pool, so a pool of one connection is never
      emptied by this one.
    * A kept connection is handed out as the pool would hand it out: one
      kept longer than ``fresh_for`` seconds goes back to the pool, whose
      checkout pings a connection that sat idle (``db.engine``,
      ``PING_AFTER_IDLE``), and so does one kept while any of the pool's
      connections was found lost (the pool then replaces those it handed
      out before), even if it was kept after another block took from the
      pool.  ``fresh_for`` None: no limit (SQLite, whose
      connections cannot be lost).
    """

    def __init__(self, engine: Engine, fresh_for: float | None) -> None:
        self._engine = engine
        self._fresh_for = fresh_for
        self._lock = threading.Lock()
        self._connection: PoolProxiedConnection | None = None
        self._pool_invalidated = False
        event.listen(engine, "invalidate", self._on_invalidate)

    def take(self) -> PoolProxiedConnection:
        """The kept connection, or else one from the pool."""
        with self._lock:
            kept, self._connection = self._connection, None
            # The mark stays until it drops a kept connection: a block
            # running meanwhile may yet keep one from before the loss.
            invalidated = self._pool_invalidated and kept is not None
            if invalidated:
                self._pool_invalidated = False
        if kept is None:
            return self._engine.raw_connection()
        if invalidated or (
                self._fresh_for is not None and time.monotonic()
                - kept.info[KEPT_AT] >= self._fresh_for):
            # Back to the pool as if returned when it was kept: its
            # checkout then pings it, or replaces it.
            checked_in(kept)
            return self._engine.raw_connection()
        del kept.info[KEPT_AT]
        return kept

    def give_back(self, proxy: PoolProxiedConnection) -> None:
        """Keep ``proxy`` (its transaction ended) for the next block, or
        check it in (see the class)."""
        pool: Any = self._engine.pool  # (a QueuePool, no overflow)
        with self._lock:
            if self._connection is None and (
                    pool.checkedout() < pool.size()):
                proxy.info[KEPT_AT] = time.monotonic()
                self._connection = proxy
                return
        checked_in(proxy)

    def close(self) -> None:
        """Check the kept connection in (before the pool is disposed)."""
        with self._lock:
            kept, self._connection = self._connection, None
        if kept is not None:
            checked_in(kept)

    def _on_invalidate(self, *_args: Any) -> None:
        """A pooled connection was invalidated (found lost)."""
        self._pool_invalidated = True


def _sqlalchemy_error(dialect: Dialect, exc: Exception, sql: str | None,
                      parameters: Any, lost: bool) -> DBAPIError:
    """The exception SQLAlchemy raises for the driver's ``exc``."""
    return cast(DBAPIError, DBAPIError.instance(
        sql, parameters, exc, dialect.loaded_dbapi.Error,
        connection_invalidated=lost, dialect=dialect))


#: What a :class:`DriverStatement` runs on.
AnyConnection = Connection | DriverConnection


class DriverStatement:
    """``statement`` (a SELECT, INSERT, UPDATE or DELETE) compiled for
    ``dialect``; its bind parameters are given by name."""

    def __init__(self, statement: Any, dialect: Dialect) -> None:
        self.statement: Executable = statement
        compiled = statement.compile(dialect=dialect)
        self._compiled = compiled
        self.sql = compiled.string
        self._positional = bool(compiled.positional)
        #: The names of the parameters in the SQL, in the driver's order
        #: where it has one: a statement given more values (a caller's
        #: dict shared by several statements) passes only its own
        #: (pymysql refuses a value it cannot encode even when unused).
        self._names = (tuple(compiled.positiontup or ()) if self._positional
                       else tuple(dict.fromkeys(compiled.bind_names.values())))
        self._pick = _picker(self._names)
        #: The values of the binds the statement carries itself (its
        #: literals); the others must be given.
        self._literals = {name: bind.effective_value
                          for name, bind in compiled.binds.items()
                          if not bind.required}
        self._bind_processors = {
            name: processor for name, bind in compiled.binds.items()
            if (processor := bind_conversion(bind.type, dialect))
            is not None}
        #: (position in :attr:`_names`, conversion) of the parameters
        #: that have one (a SQLite ``DateTime``'s text, a JSON value's).
        self._conversions = tuple(
            (index, processor) for index, name in enumerate(self._names)
            if (processor := self._bind_processors.get(name)) is not None)
        # A SELECT's columns, or the RETURNING ones of an INSERT.
        columns = (getattr(statement, "selected_columns", None)
                   or getattr(statement, "exported_columns", None))
        names = [] if columns is None else list(columns.keys())
        processors = [] if columns is None else [
            column.type.dialect_impl(dialect).result_processor(dialect, None)
            for column in columns]
        #: (position, conversion) of the columns that have one (a
        #: SQLite ``DateTime`` is text to parse; most columns have none).
        self._result_processors = tuple(
            (index, processor) for index, processor in enumerate(processors)
            if processor is not None)
        self.row_type: Any = collections.namedtuple(  # type: ignore[misc]
            "DriverRow", names, rename=True)
        self._returns = bool(getattr(compiled, "effective_returning", None))
        self._is_select = bool(getattr(statement, "is_select", False))
        self._is_insert = bool(getattr(statement, "is_insert", False))
        self._dialect = dialect
        self._error = dialect.loaded_dbapi.Error
        #: A parameter that SQLAlchemy renders into the SQL when it runs
        #: (an ``IN`` list's) is expanded for each run (:meth:`_expanded`).
        self._direct = not any(bind.expanding or bind.literal_execute
                               for bind in compiled.binds.values())

    def rows(self, conn: AnyConnection, values: Mapping[str, Any]
             ) -> list[tuple[Any, ...]]:
        """Every row, as the driver's tuples (in the order of the
        statement's columns)."""
        return self._run(conn, values, fetch=None).rows

    def first(self, conn: AnyConnection, values: Mapping[str, Any]) -> Any:
        """The first row as a named tuple (:attr:`row_type`: the names
        of the statement's columns), None when there is none."""
        rows = self._run(conn, values, fetch=1).rows
        return self.row_type._make(rows[0]) if rows else None

    def rowcount(self, conn: AnyConnection, values: Mapping[str, Any]) -> int:
        """The rows an UPDATE or DELETE matched."""
        return self._run(conn, values, fetch=0).rowcount

    def inserted_id(self, conn: AnyConnection, values: Mapping[str, Any]
                    ) -> int:
        """The id of the row an INSERT stored: its ``RETURNING`` column
        where it has one, else the driver's ``lastrowid``."""
        ran = self._run(conn, values, fetch=1 if self._returns else 0)
        stored = ran.rows[0][0] if self._returns else ran.lastrowid
        assert stored is not None  # a single-row INSERT stores one id
        return int(stored)

    def _run(self, conn: AnyConnection, values: Mapping[str, Any],
             fetch: int | None) -> _Ran:
        """Run the statement: its rows (``fetch``: all when None, at most
        that many), row count and last row id."""
        if not sqlalchemy_private.USABLE:
            return self._through_sqlalchemy(conn, values, fetch)
        dbapi_connection = conn.connection.dbapi_connection
        assert dbapi_connection is not None
        cursor = dbapi_connection.cursor()
        if self._direct:
            sql, parameters = self.sql, self._parameters(values)
        else:
            sql, parameters = self._expanded(values)
        try:
            self._dialect.do_execute(cursor, sql, parameters, None)
            if fetch is None:
                rows = cursor.fetchall()
            else:
                rows = cursor.fetchmany(fetch) if fetch else []
            # (tuple.__new__: a named tuple's own constructor is Python)
            ran = tuple.__new__(_Ran, (
                rows if type(rows) is list else list(rows),
                cursor.rowcount, getattr(cursor, "lastrowid", None)))
        except self._error as exc:
            if self._is_select and not conn.in_transaction():
                return self._read_again(conn, exc, values, fetch, cursor)
            self._raise_as_sqlalchemy(conn, exc, sql, parameters, cursor)
        cursor.close()
        if self._result_processors:
            return ran._replace(
                rows=[self._converted(row) for row in ran.rows])
        return ran

    def _parameters(self, values: Mapping[str, Any]
                    ) -> Sequence[Any] | Mapping[str, Any]:
        """The driver's parameters: every bind's value (defaults for
        those not in ``values``), converted, in the dialect's style."""
        picked = self._pick({**self._literals, **values}
                            if self._literals else values)
        if self._conversions:
            picked = list(picked)
            for index, processor in self._conversions:
                picked[index] = processor(picked[index])
            if self._positional:
                return tuple(picked)
        elif self._positional:
            return picked  # (a tuple already)
        return dict(zip(self._names, picked, strict=True))

    def _expanded(self, values: Mapping[str, Any]
                  ) -> tuple[str, Sequence[Any] | Mapping[str, Any]]:
        """The SQL and the driver's parameters of a statement with an
        ``IN`` list, expanded for these values as SQLAlchemy expands
        them when it runs the statement (its compiled form's own step,
        an empty list included)."""
        compiled = self._compiled
        expanded = sqlalchemy_private.expanded(compiled, dict(values))
        parameters = dict(expanded.parameters)
        for name, processor in (*self._bind_processors.items(),
                                *expanded.processors.items()):
            if name in parameters:
                parameters[name] = processor(parameters[name])
        if expanded.positiontup is None:
            return expanded.statement, parameters
        return expanded.statement, tuple(
            parameters[name] for name in expanded.positiontup)

    def _read_again(self, conn: AnyConnection, exc: Exception,
                    values: Mapping[str, Any], fetch: int | None,
                    cursor: Any) -> _Ran:
        """A read that failed outside a transaction, run again by
        SQLAlchemy, which raises its own exception if it fails again
        (and replaces the pool's connections if this one was lost).  On
        a :class:`DriverConnection` it runs on a new connection, this
        one invalidated if it was lost."""
        if isinstance(conn, DriverConnection) and self._dialect.is_disconnect(
                cast(Any, exc), conn.connection.dbapi_connection, cursor):
            conn.invalidate(exc)
        cursor.close()
        return self._through_sqlalchemy(conn, values, fetch)

    def _through_sqlalchemy(self, conn: AnyConnection,
                            values: Mapping[str, Any], fetch: int | None
                            ) -> _Ran:
        """The statement run by SQLAlchemy's ``Connection.execute``: its
        public API, which converts the values and the rows, expands an
        ``IN`` list and handles a lost connection itself."""
        if isinstance(conn, DriverConnection):
            if conn.in_transaction():
                raise TypeError(f"not a statement for a DriverConnection "
                                f"in a transaction: {self.sql}")
            with conn.engine.connect() as fresh:
                return self._through_sqlalchemy(fresh, values, fetch)
        result: Any = conn.execute(self.statement, dict(values))
        try:
            if fetch == 0:  # (an INSERT's id: its primary key)
                stored = (result.inserted_primary_key[0]
                          if self._is_insert else None)
                return _Ran([], int(result.rowcount), stored)
            rows = result.all() if fetch is None else result.fetchmany(fetch)
            return _Ran([tuple(row) for row in rows], len(rows), None)
        finally:
            result.close()

    def _raise_as_sqlalchemy(self, conn: AnyConnection, exc: Exception,
                             sql: str, parameters: Any, cursor: Any
                             ) -> NoReturn:
        """Raise the exception SQLAlchemy raises for ``exc``; a lost
        connection is invalidated first (the pool replaces it)."""
        cursor.close()
        dialect = self._dialect
        lost = dialect.is_disconnect(
            cast(Any, exc), conn.connection.dbapi_connection, cursor)
        error = _sqlalchemy_error(dialect, exc, sql, parameters, lost)
        if lost:
            conn.invalidate(error)
        raise error from exc

    def _converted(self, row: Sequence[Any]) -> tuple[Any, ...]:
        values = list(row)
        for index, processor in self._result_processors:
            values[index] = processor(values[index])
        return tuple(values)


def bind_conversion(type_: Any, dialect: Dialect
                    ) -> Callable[[Any], Any] | None:
    """What a value of ``type_`` becomes for the driver: the dialect's
    bind processor (None: the value as it is)."""
    processor: Callable[[Any], Any] | None = type_.dialect_impl(
        dialect).bind_processor(dialect)
    return processor


def _picker(names: tuple[str, ...]
            ) -> Callable[[Mapping[str, Any]], Sequence[Any]]:
    """The values of ``names`` from a mapping, as a sequence."""
    if len(names) > 1:
        return operator.itemgetter(*names)
    if names:
        (name,) = names
        return lambda given: (given[name],)
    return lambda _given: ()


@functools.lru_cache(maxsize=512)
def driver_statement(statement: Any, dialect: Dialect) -> DriverStatement:
    """The :class:`DriverStatement` of a statement built once (a module
    constant or a cached builder's), for ``dialect``."""
    return DriverStatement(statement, dialect)
