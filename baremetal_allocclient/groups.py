"""All-or-nothing groups of allocations: names, marks and decisions.

Shared by the SDK, the command line and the reference server (standard
library only), so that every client and the server name and mark the
members of a group the same way.

A group named ``NAME`` of ``N`` allocations has members named
``NAME-0`` .. ``NAME-<N-1>``; each member records its group.  On the
reference server the record is the allocation's ``group`` field
(``{"name": NAME, "size": N}``), shown only to a request that opts into
the extension, so ``extra`` stays exactly as the user wrote it.  On real
Ironic, where ``extra`` is the only place, it is two string values of
``extra``: :data:`GROUP_KEY` (the group's name) and :data:`SIZE_KEY`
(``"N"``), under the one prefix :data:`PREFIX`.  The functions here
read a mapping of those keys (the SDK's ``Allocation.marks``, see
:mod:`baremetal_allocclient.marks`), and still read the keys older
versions wrote (:data:`LEGACY_GROUP_KEY`, :data:`LEGACY_SIZE_KEY`, the
size a number).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from baremetal_allocclient import extension_names

#: Name of the reference server's extension (``GET /v1`` advertises it;
#: a request opts in with ``X-Baremetal-Alloc-Extensions: groups``).
EXTENSION = extension_names.GROUPS
#: Version of the extension's wire format: 2, members recorded in the
#: ``group`` field (1 wrote two keys into ``extra``).
VERSION = 2
#: ``POST`` here reserves a whole group in one transaction.
PATH = "/v1/allocation_groups"
#: The prefix of every ``extra`` key the SDK writes on real Ironic.
PREFIX = extension_names.EXTRA_PREFIX
#: ``extra`` key holding the group's name (real Ironic).
GROUP_KEY = extension_names.GROUP_KEY
#: ``extra`` key holding the group's size, as a string (real Ironic).
SIZE_KEY = extension_names.SIZE_KEY
#: The keys older versions wrote (read, never written): the name, and
#: the size as a number.
LEGACY_GROUP_KEY = extension_names.LEGACY_GROUP_KEY
LEGACY_SIZE_KEY = extension_names.LEGACY_SIZE_KEY
#: The allocation's field holding the group on the reference server.
FIELD = extension_names.GROUP_FIELD
#: Largest group (the same bound as ``create --count``).
MAX_SIZE = 1000
#: Longest group name: members add ``-`` and up to three digits and must
#: stay within Ironic's 255 characters for a name.
MAX_NAME = 251
_NAME_RE = re.compile(r"^[A-Za-z0-9\-._~]+$")


class GroupError(ValueError):
    """A group request that cannot be made (bad size or name)."""


def check(count: int, name: str | None) -> None:
    """Raise :class:`GroupError` unless ``count`` and ``name`` make a
    valid group (pure)."""
    if isinstance(count, bool) or not isinstance(count, int) or not (
            1 <= count <= MAX_SIZE):
        raise GroupError(
            f"a group has 1 to {MAX_SIZE} allocations, got {count!r}")
    if name is None:
        return
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise GroupError(
            f"invalid group name {name!r}: use letters, digits and "
            "- . _ ~ only")
    if len(name) > MAX_NAME:
        raise GroupError(
            f"group name is longer than {MAX_NAME} characters")


def member_names(name: str | None, count: int) -> list[str | None]:
    """The names of the members: ``NAME-0`` .. ``NAME-<count-1>``, or
    no names for a group without one."""
    if name is None:
        return [None] * count
    return [f"{name}-{index}" for index in range(count)]


def member_extra(extra: Mapping[str, Any] | None, name: str | None,
                 count: int) -> dict[str, Any] | None:
    """A member's ``extra`` as the SDK builds it: the caller's, plus the
    group's marks (strings) when the group has a name.  ``None`` when
    there is nothing to record.  (Against the reference server the marks
    are sent as the ``group`` field instead: :mod:`baremetal_allocclient.
    marks`.)"""
    result = dict(extra or {})
    if name is not None:
        result[GROUP_KEY] = name
        result[SIZE_KEY] = str(count)
    return result or None


def group_of(marks: Mapping[str, Any] | None) -> str | None:
    """The group an allocation's marks (or ``extra``) name, if any."""
    found = marks or {}
    value = found.get(GROUP_KEY, found.get(LEGACY_GROUP_KEY))
    return value if isinstance(value, str) else None


def size_of(marks: Mapping[str, Any] | None) -> int | None:
    """The group size recorded in the marks (or ``extra``), if any: a
    string of digits, or a number (as older versions wrote it)."""
    found = marks or {}
    value = found.get(SIZE_KEY, found.get(LEGACY_SIZE_KEY))
    if isinstance(value, str) and value.isascii() and value.isdigit() \
            and len(value) <= 9:
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def incomplete_groups(members: Iterable[tuple[str, Mapping[str, Any] | None,
                                              str]]) -> dict[str, str]:
    """Groups whose stored members do not make a whole, active group:
    ``{group name: why}``, from ``(uuid, extra, state)`` triples (pure).

    A whole group has exactly its recorded size of members, all
    ``active``.  (A group being created, or one whose creation failed
    and is being rolled back, is incomplete for a moment; callers judge
    a settled system.)
    """
    seen: dict[str, list[tuple[int | None, str]]] = {}
    for _uuid, extra, state in members:
        group = group_of(extra)
        if group is not None:
            seen.setdefault(group, []).append((size_of(extra), state))
    found: dict[str, str] = {}
    for group, items in seen.items():
        sizes = {size for size, _state in items}
        states = sorted({state for _size, state in items})
        if len(sizes) != 1 or None in sizes:
            listed = sorted(str(size) for size in sizes)
            found[group] = f"members disagree on the size: {listed}"
        elif len(items) != next(iter(sizes)):
            found[group] = (f"{len(items)} of {next(iter(sizes))} members "
                            "exist")
        elif states != ["active"]:
            found[group] = f"members in states {states}"
    return found


def failure_summary(count: int, index: int, ident: str,
                    reason: str | None) -> str:
    """Why a group was not made, naming the member that failed (pure)."""
    return (f"Group of {count} not reserved: allocation {index + 1} of "
            f"{count} ({ident}) failed: {reason or 'no reason given'}")


def distinct_nodes(node_uuids: Sequence[str | None]) -> bool:
    """Whether every member holds a node and no node twice (pure)."""
    return None not in node_uuids and len(set(node_uuids)) == len(
        node_uuids)
