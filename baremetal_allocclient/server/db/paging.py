"""Keyset pagination of a list query: ORDER BY with explicit NULL
ordering, then the rows after a marker, so a page is the same on every
database."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, and_, or_
from sqlalchemy.orm import InstrumentedAttribute

from baremetal_allocclient.server.domain.paging import Page


def order_and_page(
    query: Any,
    page: Page,
    column: InstrumentedAttribute[Any],
    id_column: InstrumentedAttribute[int],
    marker: tuple[Any, int] | None,
) -> Any:
    """Apply ORDER BY (nulls first when ascending), the marker and LIMIT
    (:func:`ordered_after`, then the page's limit)."""
    return ordered_after(query, page.sort_dir, column, id_column,
                         marker).limit(page.limit)


def ordered_after(
    query: Any,
    sort_dir: str,
    column: InstrumentedAttribute[Any],
    id_column: InstrumentedAttribute[int],
    marker: tuple[Any, Any] | None,
) -> Any:
    """Apply ORDER BY (nulls first when ascending) and keep the rows
    after ``marker`` (its sort value and id: values, or bind parameters
    for a statement compiled once).

    Sorted by the id itself (never null, unique), the order and the
    marker need the id alone: SQLite then walks the primary key instead
    of sorting every row.
    """
    if column is id_column:
        return _by_id(query, sort_dir, id_column, marker)
    not_null = column.is_not(None)
    if sort_dir == "asc":
        query = query.order_by(not_null.asc(), column.asc(), id_column.asc())
    else:
        query = query.order_by(
            not_null.desc(), column.desc(), id_column.desc()
        )
    if marker is not None:
        query = query.where(_after(column, id_column, marker, sort_dir))
    return query


def _by_id(
    query: Any,
    sort_dir: str,
    id_column: InstrumentedAttribute[int],
    marker: tuple[Any, Any] | None,
) -> Any:
    if sort_dir == "asc":
        query = query.order_by(id_column.asc())
        if marker is not None:
            query = query.where(id_column > marker[1])
    else:
        query = query.order_by(id_column.desc())
        if marker is not None:
            query = query.where(id_column < marker[1])
    return query


def _after(
    column: InstrumentedAttribute[Any],
    id_column: InstrumentedAttribute[int],
    marker: tuple[Any, Any],
    sort_dir: str,
) -> ColumnElement[bool]:
    value, marker_id = marker
    if sort_dir == "asc":
        if value is None:
            return or_(
                and_(column.is_(None), id_column > marker_id),
                column.is_not(None),
            )
        return or_(
            column > value, and_(column == value, id_column > marker_id)
        )
    if value is None:
        return and_(column.is_(None), id_column < marker_id)
    return or_(
        column < value,
        and_(column == value, id_column < marker_id),
        column.is_(None),
    )
