"""The ``group`` and ``lease`` fields in an allocation's view, for a
request that opted into the groups or leases extension
(``allocation/marks.py`` says what they hold); any other request's view
is left as Ironic's."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from baremetal_allocclient import extension_names, groups, leases
from baremetal_allocclient.server.allocation.marks import (
    Shown,
    group_document,
    lease_document,
)
from baremetal_allocclient.server.api import json_text
from baremetal_allocclient.server.api.context import Context
from baremetal_allocclient.server.api.extensions import requested
from baremetal_allocclient.server.db import lookups


def shown(ctx: Context) -> Shown:
    """The fields the request opted into."""
    names = requested(ctx.request.headers.get(
        extension_names.EXTENSION_HEADER))
    return Shown(groups.EXTENSION in names, leases.EXTENSION in names)


#: What a view without a group or a lease gains, for each choice.
_NONE = {
    Shown(True, False): ', "group": null}',
    Shown(False, True): ', "lease": null}',
    Shown(True, True): ', "group": null, "lease": null}',
}


def with_fields(view: str, opted: Shown, group_name: str | None,
                group_size: int | None,
                lease_expires_at: datetime.datetime | str | None,
                lease_duration: str | None) -> str:
    """An allocation's view (JSON text) with the fields ``opted`` asks
    for: unchanged for a request that opted into neither."""
    if not opted:
        return view
    if group_name is None and lease_expires_at is None:
        return view[:-1] + _NONE[opted]
    if opted.group:
        view = json_text.with_member(view, groups.FIELD, json_text.value(
            group_document(group_name, group_size)))
    if opted.lease:
        view = json_text.with_member(view, leases.FIELD, json_text.value(
            lease_document(lease_expires_at, lease_duration)))
    return view


def record_with_fields(view: str, opted: Shown, record: Any) -> str:
    """:func:`with_fields` of an allocation read by attribute."""
    if not opted:
        return view
    return with_fields(view, opted, record.group_name, record.group_size,
                       record.lease_expires_at, record.lease_duration)


#: Where a row of ``lookups.allocation_rows(marks=True)`` has the
#: extensions' columns (after the view's and the node's UUID).
_MARKS_AT = len(lookups.ALLOCATION_VIEW_COLUMNS) + 1
_GROUP_AT = _MARKS_AT + lookups.MARK_COLUMNS.index("group_name")
_LEASE_AT = _MARKS_AT + lookups.MARK_COLUMNS.index("lease_expires_at")


def rows(render: Callable[[Sequence[Any]], str], found: Sequence[Any],
         opted: Shown) -> Iterator[str]:
    """A list's rows (with the extensions' columns) rendered, with the
    fields ``opted`` asks for.  Most allocations have no group and no
    lease: theirs is one constant suffix (a list of 1,000 costs the
    server about as much as without the fields)."""
    none = _NONE[opted]
    at = _MARKS_AT
    for row in found:
        view = render(row[:at])
        if row[_GROUP_AT] is None and row[_LEASE_AT] is None:
            yield view[:-1] + none
        else:
            yield with_fields(view, opted, *row[at:])
