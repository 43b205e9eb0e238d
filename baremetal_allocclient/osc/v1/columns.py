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

from cliff import columns as cliff_columns

from baremetal_allocclient import leases
from baremetal_allocclient.v1 import Allocation

#: Wire name -> SDK attribute, from the SDK's field table.
_ATTRIBUTES: dict[str, str] = {
    spec.wire: spec.name for spec in Allocation.field_specs()
}
#: The derived lease column and the API field it is read from.
LEASE_COLUMN = "lease_expires_at"
_DERIVED: dict[str, str] = {LEASE_COLUMN: "extra"}
#: Every displayable field, in the SDK's declaration order ("links" is
#: navigation for machines, not data for people), then the lease's end.
ALL: tuple[str, ...] = (
    *(w for w in _ATTRIBUTES if w != "links"), LEASE_COLUMN,
)
#: What ``list`` shows without ``--long`` or ``--fields``.
DEFAULT_LIST: tuple[str, ...] = (
    "uuid",
    "name",
    "resource_class",
    "state",
    "node_uuid",
    LEASE_COLUMN,
)
#: Fields Ironic refuses in ``sort_key`` (lists and free-form documents);
#: the derived column is not a server field at all.
UNSORTABLE: frozenset[str] = frozenset(
    {"traits", "candidate_nodes", "extra", LEASE_COLUMN})
SORTABLE: tuple[str, ...] = tuple(c for c in ALL if c not in UNSORTABLE)

assert set(DEFAULT_LIST) <= set(ALL), "DEFAULT_LIST names unknown fields"


class ListColumn(cliff_columns.FormattableColumn[list[Any]]):
    """A list: comma separated in tables, a real list in json/yaml."""

    def human_readable(self) -> str:
        return ", ".join(str(item) for item in self._value)


class DictColumn(cliff_columns.FormattableColumn[dict[str, Any]]):
    """A mapping: ``k='v'`` pairs in tables, an object in json/yaml."""

    def human_readable(self) -> str:
        return ", ".join(
            f"{key}={value!r}" for key, value in sorted(self._value.items())
        )


#: Output formats read by shell scripts, where "None" would be a value.
TEXT_FORMATS: frozenset[str] = frozenset({"value", "shell", "csv"})


def display_value(value: Any, *, blank_none: bool = False) -> Any:
    """Wrap one field value for cliff's formatters.

    With ``blank_none`` a missing value becomes "" rather than None, which
    cliff's text formatters would print as the word "None".
    """
    if value is None:
        return "" if blank_none else None
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return DictColumn(dict(value))
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return ListColumn(list(value))
    return value


def fetched(names: Sequence[str] | None) -> list[str] | None:
    """The API fields to fetch (``fields=``) to show ``names``."""
    if names is None:
        return None
    return list(dict.fromkeys(_DERIVED.get(n, n) for n in names))


def lease_expiry(allocation: Allocation) -> str | None:
    """The recorded end of the lease, as recorded (None: no lease)."""
    value = (allocation.extra or {}).get(leases.EXPIRES_KEY)
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


def row(
    allocation: Allocation,
    names: Sequence[str],
    output_format: str | None = None,
) -> tuple[Any, ...]:
    """The values of ``names`` for one allocation, ready for a formatter."""
    blank = output_format in TEXT_FORMATS
    return tuple(
        display_value(_value(allocation, n), blank_none=blank)
        for n in names
    )
