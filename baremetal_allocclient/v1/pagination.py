"""Pure helpers for walking Ironic's paginated collections.

Ironic ends a full page with a ``next`` link whose query carries ``limit``
and ``marker`` but, for allocations, drops the filters (``state``,
``resource_class``, ``node``, ``owner``): following it verbatim would widen
the query.  The iterator therefore takes only the ``marker`` from each
``next`` link and re-sends the caller's original query with it.  This also
keeps requests on the configured endpoint even when the server builds links
from a different public URL.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Any

from baremetal_allocclient import exceptions


def marker_from_next(next_link: Any) -> str | None:
    """Return the ``marker`` query parameter of a ``next`` link, if any."""
    if not isinstance(next_link, str) or not next_link:
        return None
    query = urllib.parse.urlsplit(next_link).query
    values = urllib.parse.parse_qs(query).get("marker")
    return values[-1] if values else None


def page_limit(page_size: int | None, remaining: int | None) -> int | None:
    """Return the ``limit`` to request for the next page.

    ``page_size`` is the caller's preferred page; ``remaining`` is how many
    items the overall ``limit`` still allows.  ``None`` lets the server use
    its own maximum page size.
    """
    if page_size is None:
        return remaining
    if remaining is None:
        return page_size
    return min(page_size, remaining)


def check_positive(name: str, value: int | None) -> None:
    """Reject zero or negative limits before any request is sent."""
    if value is not None and (isinstance(value, bool) or value < 1):
        raise exceptions.InvalidArgument(
            f"{name} must be a positive integer, got {value!r}"
        )


def build_query(
    filters: Mapping[str, Any], *, limit: int | None, marker: str | None
) -> dict[str, str]:
    """Combine filters, page limit and marker into query parameters.

    ``None`` values are omitted; sequences (``fields``) are comma-joined.
    """
    params: dict[str, str] = {}
    for key, value in filters.items():
        if value is None:
            continue
        if isinstance(value, list | tuple):
            params[key] = ",".join(value)
        else:
            params[key] = str(value)
    if limit is not None:
        params["limit"] = str(limit)
    if marker is not None:
        params["marker"] = marker
    return params


def items_of(doc: Any, key: str) -> tuple[list[Any], Any]:
    """Return ``(items, next link)`` from a collection document."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get(key), list):
        raise exceptions.InvalidResponse(
            f"Expected a collection with a {key!r} list from the server"
        )
    return doc[key], doc.get("next")
