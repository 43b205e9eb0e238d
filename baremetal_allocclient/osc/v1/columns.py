"""The one column registry of the allocation commands.

Column names are the API's field names, taken from the SDK's Allocation
dataclass, so ``-c node_uuid`` and ``-f json`` keys match what the server
returns. Only the presentation choices live here: which columns a plain
``list`` shows and which fields the server refuses to sort by.

One column is derived rather than fetched: ``lease_expires_at``, the end
of the allocation's lease as recorded in ``extra`` (see
:mod:`baremetal_allocclient.leases`); asking for it fetches ``extra``.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from baremetal_allocclient import leases
from baremetal_allocclient.v1 import Allocation

#: Wire name -> SDK attribute, from the SDK's field table.
_ATTRIBUTES: dict[str, str] = {
    spec.wire: spec.name for spec in Allocation.field_specs()
}
#: The derived lease column and the API field it is read from.
LEASE_COLUMN = "lease_expires_at"
_DERIVED: dict[str, str] = {LEASE_COLUMN: "extra"}
#: python-ironicclient's allocation columns, in its order: ``list`` shows
#: IRONICCLIENT_LIST, ``list --long`` and ``create`` IRONICCLIENT_LONG, and
#: ``show`` the record's fields sorted by name (IRONICCLIENT_RECORD).
IRONICCLIENT_LIST: tuple[str, ...] = (
    "uuid", "name", "resource_class", "state", "node_uuid",
)
IRONICCLIENT_LONG: tuple[str, ...] = (
    "uuid", "name", "state", "owner", "node_uuid", "last_error",
    "resource_class", "traits", "candidate_nodes", "extra", "created_at",
    "updated_at",
)
IRONICCLIENT_RECORD: tuple[str, ...] = tuple(sorted(IRONICCLIENT_LONG))
#: Every displayable field: python-ironicclient's, then the lease's end
#: ("links" is navigation for machines, not data for people).
ALL: tuple[str, ...] = (*IRONICCLIENT_LONG, LEASE_COLUMN)
#: What ``list`` fetches without ``--long`` or ``--fields``; the columns
#: beyond IRONICCLIENT_LIST are shown only when ``-c`` names them.
DEFAULT_LIST: tuple[str, ...] = (*IRONICCLIENT_LIST, LEASE_COLUMN)
#: What ``show`` fetches; the same rule for extra columns.
RECORD: tuple[str, ...] = (*IRONICCLIENT_RECORD, LEASE_COLUMN)
#: Fields Ironic refuses in ``sort_key`` (lists and free-form documents);
#: the derived column is not a server field at all.
UNSORTABLE: frozenset[str] = frozenset(
    {"traits", "candidate_nodes", "extra", LEASE_COLUMN})
SORTABLE: tuple[str, ...] = tuple(c for c in ALL if c not in UNSORTABLE)

assert set(ALL) == set(_ATTRIBUTES) - {"links"} | {LEASE_COLUMN}, (
    "ALL and the SDK's Allocation fields differ")


def display_value(value: Any) -> Any:
    """One field value as python-ironicclient hands it to cliff.

    The API's own JSON value: timestamps as ISO 8601 strings, lists and
    objects as such (a table shows their Python form, json and yaml their
    structure) and a missing value as None, which the text formats print
    as the word "None" and json and yaml as null.
    """
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {key: display_value(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [display_value(item) for item in value]
    return value


def fetched(names: Sequence[str] | None) -> list[str] | None:
    """The API fields to fetch (``fields=``) to show ``names``."""
    if names is None:
        return None
    return list(dict.fromkeys(_DERIVED.get(n, n) for n in names))


def lease_expiry(allocation: Allocation) -> str | None:
    """The recorded end of the lease, as recorded (None: no lease)."""
    value = allocation.marks.get(leases.EXPIRES_KEY)
    return None if value is None else str(value)


def _value(allocation: Allocation, name: str) -> Any:
    if name == LEASE_COLUMN:
        return lease_expiry(allocation)
    return getattr(allocation, _ATTRIBUTES[name])


def sort_allocations(
    allocations: Iterable[Allocation],
    keys: Sequence[tuple[str, str | None]],
) -> list[Allocation]:
    """Sort by several ``(field, asc|desc|None)`` keys, the first primary.

    Stable sorts from the last key to the first, as osc-lib's
    ``sort_items`` (python-ironicclient's ``--sort``); missing values sort
    first in ascending order.
    """
    items = list(allocations)
    for name, direction in reversed(keys):
        items.sort(
            key=functools.partial(_sort_value, _ATTRIBUTES[name]),
            reverse=direction == "desc",
        )
    return items


def _sort_value(attribute: str, allocation: Allocation) -> tuple[bool, Any]:
    value = getattr(allocation, attribute)
    if isinstance(value, datetime.datetime):
        value = value.isoformat()
    return (value is not None, "" if value is None else value)


def row(allocation: Allocation, names: Sequence[str]) -> tuple[Any, ...]:
    """The values of ``names`` for one allocation, ready for a formatter."""
    return tuple(display_value(_value(allocation, n)) for n in names)

