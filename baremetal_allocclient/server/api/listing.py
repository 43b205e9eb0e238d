"""Collection parameters shared by node and allocation lists.

Pagination is keyset-based (sort column, then id) with explicit NULL
ordering, so it behaves the same on every database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import ColumnElement, and_, or_
from sqlalchemy.orm import InstrumentedAttribute

from baremetal_allocclient.server.api import numbers
from baremetal_allocclient.server.api.errors import bad_request

MAX_LIMIT = 1000
_TRUE = ("1", "on", "t", "true", "y", "yes")
_FALSE = ("0", "f", "false", "n", "no", "off")


def parse_bool(name: str, value: str | None) -> bool | None:
    """Ironic's boolean query values; anything else is a 400."""
    if value is None:
        return None
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    accepted = ", ".join(f"'{v}'" for v in sorted(_TRUE + _FALSE))
    raise bad_request(
        f"Invalid {name}: Unrecognized value '{value}', acceptable values "
        f"are: {accepted}"
    )


def parse_limit(value: str | None) -> int:
    """The page size: positive, capped at MAX_LIMIT (default MAX_LIMIT)."""
    if value is None:
        return MAX_LIMIT
    try:
        limit = numbers.integer(value, "limit")
    except numbers.NotANumber:
        raise bad_request(
            f"Expected an integer for limit: {numbers.quoted(value)}"
        ) from None
    except numbers.OutOfRange as exc:
        raise bad_request(f"Invalid limit: {exc.reason}") from None
    if limit <= 0:
        raise bad_request("Limit must be positive")
    return min(limit, MAX_LIMIT)


def parse_sort_dir(value: str | None) -> str:
    """asc (default) or desc."""
    if value is None:
        return "asc"
    if value not in ("asc", "desc"):
        raise bad_request(f"Schema error: '{value}' is not one of "
                          f"['asc', 'desc']")
    return value


def parse_sort_key(value: str | None, allowed: Sequence[str]) -> str:
    """A column name to sort by; id by default."""
    if value is None:
        return "id"
    if value not in allowed:
        raise bad_request(
            f'The sort_key value "{value}" is an invalid field for sorting'
        )
    return value


def parse_fields(value: str | None) -> list[str] | None:
    """The comma-separated ``fields`` parameter, None when absent."""
    if value is None:
        return None
    return [f.strip() for f in value.split(",") if f.strip()]


def split_list(value: str) -> list[str]:
    """A comma-separated filter value as Ironic reads it: stripped,
    lower-cased, without empty items or repeats."""
    items: list[str] = []
    for item in value.split(","):
        normalized = item.strip().lower()
        if normalized and normalized not in items:
            items.append(normalized)
    return items


@dataclass(frozen=True)
class Page:
    """Sorting and paging of one list request."""

    limit: int
    sort_key: str
    sort_dir: str


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


def next_link(
    base_url: str,
    resource: str,
    params: Mapping[str, str],
    page: Page,
    returned: int,
    last_uuid: str | None,
) -> str | None:
    """The absolute URL of the next page, None when this one was the last."""
    if returned == 0 or returned < page.limit or last_uuid is None:
        return None
    query = {
        k: v for k, v in params.items()
        if k not in ("limit", "marker", "sort_key", "sort_dir")
    }
    query.update(
        sort_key=page.sort_key,
        sort_dir=page.sort_dir,
        limit=str(page.limit),
        marker=last_uuid,
    )
    return f"{base_url}/v1/{resource}?{urlencode(query, safe=',')}"
