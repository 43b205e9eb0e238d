"""One SELECT compiled once, run on the database driver's own cursor.

A poll and a page of a list are one statement each, and the clients
that wait on allocations repeat them.  Around the driver's work,
SQLAlchemy's execution (its execution context, the cursor's description,
a ``Row`` per row) costs more than the work itself.  A
:class:`DriverRead` keeps what SQLAlchemy compiled for one dialect (the
SQL, the order of its parameters, the conversions of the columns that
have one) and runs it on the DB-API cursor of a connection SQLAlchemy's
pool handed out, such as ``Database.statement_connection``'s, through
the dialect's ``do_execute`` (as SQLAlchemy runs every statement).

Errors are SQLAlchemy's: when the driver raises, the statement is run
once more through SQLAlchemy on the same connection, which raises its
usual exception and, for a lost connection, invalidates the pool, as for
any other statement.  A read changes nothing, so running it twice is
harmless (a statement that then succeeds answers as usual).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Select
from sqlalchemy.engine import Connection, Dialect

_Processor = Callable[[Any], Any]


class DriverRead:
    """``statement`` compiled for ``dialect``; its bind parameters are
    given by name to :meth:`rows` and :meth:`first`."""

    def __init__(self, statement: Select[Any], dialect: Dialect) -> None:
        self.statement = statement
        compiled = statement.compile(dialect=dialect)
        self._compiled = compiled
        self.sql = compiled.string
        self._order = (tuple(compiled.positiontup or ())
                       if compiled.positional else None)
        self._bind_processors = {
            name: processor for name, bind in compiled.binds.items()
            if (processor := bind.type.dialect_impl(dialect)
                .bind_processor(dialect)) is not None}
        processors = [
            column.type.dialect_impl(dialect).result_processor(dialect, None)
            for column in statement.selected_columns]
        #: (position, conversion) of the columns that have one (a
        #: SQLite ``DateTime`` is text to parse; most columns have none).
        self._result_processors = tuple(
            (index, processor) for index, processor in enumerate(processors)
            if processor is not None)
        self.row_type: Any = collections.namedtuple(  # type: ignore[misc]
            "DriverRow", statement.selected_columns.keys(), rename=True)
        self._dialect = dialect
        self._error = dialect.loaded_dbapi.Error
        #: A parameter that SQLAlchemy renders into the SQL when it runs
        #: (an ``IN`` list's) leaves the statement to SQLAlchemy.
        self._direct = not any(bind.expanding or bind.literal_execute
                               for bind in compiled.binds.values())

    def _parameters(self, values: Mapping[str, Any]
                    ) -> Sequence[Any] | Mapping[str, Any]:
        """The driver's parameters: every bind's value (defaults for
        those not in ``values``), converted, in the dialect's style."""
        parameters = self._compiled.construct_params(dict(values))
        for name, processor in self._bind_processors.items():
            parameters[name] = processor(parameters[name])
        if self._order is None:
            return parameters
        return tuple(parameters[name] for name in self._order)

    def _fetched(self, conn: Connection, values: Mapping[str, Any],
                 size: int | None) -> list[tuple[Any, ...]]:
        if not self._direct:
            return self._through_sqlalchemy(conn, values, size)
        dbapi_connection = conn.connection.dbapi_connection
        assert dbapi_connection is not None
        cursor = dbapi_connection.cursor()
        try:
            self._dialect.do_execute(cursor, self.sql,
                                     self._parameters(values), None)
            rows = (cursor.fetchall() if size is None
                    else cursor.fetchmany(size))
        except self._error:
            cursor.close()
            # SQLAlchemy raises what it raises for any statement.
            return self._through_sqlalchemy(conn, values, size)
        cursor.close()
        if not self._result_processors:
            return list(rows)
        return [self._converted(row) for row in rows]

    def _through_sqlalchemy(self, conn: Connection,
                            values: Mapping[str, Any], size: int | None
                            ) -> list[tuple[Any, ...]]:
        result = conn.execute(self.statement, dict(values))
        return [tuple(row) for row in (
            result.all() if size is None else result.fetchmany(size))]

    def _converted(self, row: Sequence[Any]) -> tuple[Any, ...]:
        values = list(row)
        for index, processor in self._result_processors:
            values[index] = processor(values[index])
        return tuple(values)

    def rows(self, conn: Connection, values: Mapping[str, Any]
             ) -> list[tuple[Any, ...]]:
        """Every row, as the driver's tuples (in the order of the
        statement's columns)."""
        return self._fetched(conn, values, None)

    def first(self, conn: Connection, values: Mapping[str, Any]) -> Any:
        """The first row as a named tuple (:attr:`row_type`: the names
        of the statement's columns), None when there is none."""
        found = self._fetched(conn, values, 1)
        return self.row_type._make(found[0]) if found else None
