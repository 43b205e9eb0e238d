"""The query parameters of node, port and allocation lists (paging,
booleans, fields) and the link to the next page.

The pages themselves are keyset-based (``db/paging.py``): the same on
every database.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from urllib.parse import urlencode

from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.api import numbers, versions
from baremetal_allocclient.server.api.errors import bad_request, not_acceptable
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


def answer_fields(fields: list[str] | None, detail_query: str | None,
                  minor: int, detail_route: bool,
                  default: Sequence[str]) -> list[str] | None:
    """The fields a list of ports or chassis answers with (None: every
    field): ``/detail`` or ``?detail=True`` (from 1.43, never with
    ``fields``) give every one; otherwise ``fields`` (already checked)
    or the list's ``default``."""
    if detail_route:
        return None
    as_detail = schemas.boolean("detail", detail_query)
    if as_detail is not None and minor < versions.DETAIL_QUERY:
        raise not_acceptable()
    if as_detail and fields is not None:
        raise bad_request("Can not specify ?detail=True and fields")
    if as_detail:
        return None
    return fields if fields is not None else list(default)


def parse_page(query: Callable[[str], str | None], sort_keys: Sequence[str],
               unsortable: Sequence[str],
               newer: Callable[[str], bool] = lambda _key: False) -> Page:
    """The page a list asks for (``limit``, ``sort_key``, ``sort_dir``):
    a field that cannot be sorted on is a 400, one newer than the
    request's version (``newer``) a 406."""
    sort_key = query("sort_key")
    if sort_key in unsortable:
        raise bad_request(f"The sort_key value {sort_key} is an invalid "
                          f"field for sorting")
    if sort_key is not None and newer(sort_key):
        raise not_acceptable()
    return Page(limit=parse_limit(query("limit")),
                sort_key=parse_sort_key(sort_key, sort_keys),
                sort_dir=parse_sort_dir(query("sort_dir")))


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
