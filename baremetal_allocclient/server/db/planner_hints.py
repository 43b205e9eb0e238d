"""SQL written for each database's query planner.

Three planners read the same statements.  SQLite plans without
statistics (the server never runs ``ANALYZE``), so a query may take an
index that matches one row in theory and walks many in practice; the
usual cure is to write the column so that no index can serve it
(``x + 0``, ``x || ''``).  PostgreSQL and MariaDB plan from statistics,
and such an expression hides the column's from them: they then think
almost no row matches and read every candidate to sort a few.
:func:`unindexed` writes a column that way on SQLite only.

PostgreSQL plans a prepared statement once for every value of its
parameters (after psycopg prepared it, on its fifth run); in id order,
such a plan may walk the primary key from a pivot past every row the
filters reject.  :func:`index_order` names the order of the index the
statement should read, columns fixed by equalities first, which on
PostgreSQL leaves a range of that index the one plan without a sort.
MariaDB sorts when an ``ORDER BY`` names such fixed columns, so it, like
SQLite, gets the plain order.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer
from sqlalchemy.orm import QueryableAttribute
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.visitors import InternalTraversal

from baremetal_allocclient.server.db.typed import compiles


class _Unindexed(ColumnElement[Any]):
    """A column that SQLite may not look up in an index."""

    inherit_cache = True
    _traverse_internals = [("column", InternalTraversal.dp_clauseelement)]

    def __init__(self, column: ColumnElement[Any]) -> None:
        self.column = column
        self.type = column.type


def unindexed(column: QueryableAttribute[Any]) -> ColumnElement[Any]:
    """A mapped column as an expression no SQLite index serves (same
    value, same type); the column itself on every other database."""
    return _Unindexed(column.__clause_element__())


@compiles(_Unindexed)
def _as_itself(element: _Unindexed, compiler: Any, **kw: Any) -> str:
    return str(compiler.process(element.column, **kw))


@compiles(_Unindexed, "sqlite")
def _on_sqlite(element: _Unindexed, compiler: Any, **kw: Any) -> str:
    column = compiler.process(element.column, **kw)
    if isinstance(element.type, Integer):
        return f"({column} + 0)"
    return f"({column} || '')"


class _IndexOrder(ColumnElement[Any]):
    """Ascending ``last`` order, written on PostgreSQL as the order of an
    index on ``fixed`` then ``last``, whose ``fixed`` columns the
    filters hold equal."""

    inherit_cache = True
    _traverse_internals = [
        ("fixed", InternalTraversal.dp_clauseelement_tuple),
        ("last", InternalTraversal.dp_clauseelement),
    ]

    def __init__(self, fixed: tuple[ColumnElement[Any], ...],
                 last: ColumnElement[Any]) -> None:
        self.fixed = fixed
        self.last = last
        self.type = last.type


def index_order(fixed: tuple[QueryableAttribute[Any], ...],
                key: QueryableAttribute[Any]) -> ColumnElement[Any]:
    """An ``ORDER BY`` item: ``key`` ascending, which is the order of an
    index on ``fixed`` then ``key`` when the statement's filters hold
    every ``fixed`` column equal to one value (the caller's promise)."""
    return _IndexOrder(tuple(c.__clause_element__() for c in fixed),
                       key.__clause_element__())


@compiles(_IndexOrder)
def _by_key(element: _IndexOrder, compiler: Any, **kw: Any) -> str:
    return str(compiler.process(element.last, **kw))


@compiles(_IndexOrder, "postgresql")
def _by_index(element: _IndexOrder, compiler: Any, **kw: Any) -> str:
    return ", ".join(str(compiler.process(column, **kw))
                     for column in (*element.fixed, element.last))
