"""The query parameters of node, port and allocation lists (paging,
booleans, fields) and the link to the next page.

The pages themselves are keyset-based (``db/paging.py``): the same on
every database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import urlencode

from baremetal_allocclient.server.api import numbers
from baremetal_allocclient.server.api.errors import bad_request
from baremetal_allocclient.server.domain.paging import Page

MAX_LIMIT = 1000


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
