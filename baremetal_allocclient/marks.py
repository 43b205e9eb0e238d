"""An allocation's marks: its group and its lease, wherever they live
(pure, standard library only).

The SDK works with one mapping of marks, keyed as on real Ironic
(:data:`groups.GROUP_KEY`, :data:`groups.SIZE_KEY`,
:data:`leases.EXPIRES_KEY`, :data:`leases.DURATION_KEY`: every key under
the one prefix ``baremetal_alloc:``, every value a string).  Where they
travel depends on the server:

* the reference server keeps them in fields of their own, ``group`` and
  ``lease``, shown to and accepted from a request that opts into the
  ``groups`` and ``leases`` extensions (:func:`to_fields`,
  :func:`from_fields`); ``extra`` is then exactly what the user wrote;
* real Ironic has only ``extra``: the marks are keys of it.

:func:`of` reads both (and the keys older versions wrote), so the SDK
finds a group or a lease made by any version against either server.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from baremetal_allocclient import extension_names as names
from baremetal_allocclient import leases

#: The keys of the marks (what :func:`split` takes out of ``extra``).
KEYS = frozenset({names.GROUP_KEY, names.SIZE_KEY, leases.EXPIRES_KEY,
                  leases.DURATION_KEY})
#: The same, with the keys older versions wrote.
READ_KEYS = KEYS | {names.LEGACY_GROUP_KEY, names.LEGACY_SIZE_KEY}


def split(extra: Mapping[str, Any] | None
          ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """``extra`` without the marks, and the marks (pure)."""
    if not extra:
        return (None if extra is None else {}), {}
    found = {k: v for k, v in extra.items() if k in KEYS}
    if not found:
        return dict(extra), {}
    return {k: v for k, v in extra.items() if k not in KEYS}, found


def to_fields(marks: Mapping[str, Any]) -> dict[str, Any]:
    """The ``group`` and ``lease`` fields of a request to the reference
    server carrying these marks (only those there are; pure)."""
    # (Only a create or renewal needs the groups module: a list does not
    # import it, tests/functional/cli/test_startup_imports.py.)
    from baremetal_allocclient import groups

    fields: dict[str, Any] = {}
    name = groups.group_of(marks)
    if name is not None:
        fields[groups.FIELD] = {"name": name, "size": groups.size_of(marks)}
    end = marks.get(leases.EXPIRES_KEY)
    if isinstance(end, str):
        lease = {"expires_at": end}
        duration = marks.get(leases.DURATION_KEY)
        if isinstance(duration, str):
            lease["duration"] = duration
        fields[leases.FIELD] = lease
    return fields


def from_fields(document: Mapping[str, Any]) -> dict[str, Any]:
    """The marks in an allocation document's ``group`` and ``lease``
    fields (the reference server's, for a request that opted in)."""
    marks: dict[str, Any] = {}
    group = document.get(names.GROUP_FIELD)
    if isinstance(group, Mapping) and isinstance(group.get("name"), str):
        marks[names.GROUP_KEY] = group["name"]
        size = group.get("size")
        if isinstance(size, int) and not isinstance(size, bool):
            marks[names.SIZE_KEY] = str(size)
    lease = document.get(leases.FIELD)
    if isinstance(lease, Mapping) and isinstance(lease.get("expires_at"),
                                                 str):
        marks[leases.EXPIRES_KEY] = lease["expires_at"]
        if isinstance(lease.get("duration"), str):
            marks[leases.DURATION_KEY] = lease["duration"]
    return marks


def of(document: Mapping[str, Any]) -> dict[str, Any]:
    """An allocation document's marks: its fields (reference server),
    else the keys of its ``extra`` (real Ironic, any version)."""
    extra = document.get("extra")
    found = {k: v for k, v in extra.items() if k in READ_KEYS} \
        if isinstance(extra, Mapping) else {}
    return {**found, **from_fields(document)}
