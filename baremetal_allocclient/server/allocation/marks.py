"""An allocation's group and lease: fields of their own, never ``extra``.

A group member's group (``group_name``, ``group_size``) and a lease
(``lease_expires_at``, ``lease_duration``) are columns of the allocation
(migration 0016 moved them out of ``extra``).  A request that opts into
the ``groups`` extension (``X-Baremetal-Alloc-Extensions: groups``) sees
and may give the ``group`` field, ``{"name": ..., "size": ...}``; one
that opts into ``leases`` the ``lease`` field, ``{"expires_at":
"2030-01-02T03:04:05Z", "duration": "2h"}`` (on a create, either key
alone: a duration starts now).  Any other request reads the allocation
as Ironic would, ``extra`` exactly as it was written.  Rendering the
fields is ``handlers/marks_view.py``'s.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from baremetal_allocclient import groups, leases
from baremetal_allocclient.server.domain.errors import Invalid


@dataclasses.dataclass(frozen=True)
class Shown:
    """Which of the fields a request opted into."""

    group: bool = False
    lease: bool = False

    def __bool__(self) -> bool:
        return self.group or self.lease


def lease_columns(document: Any, now: datetime.datetime) -> dict[str, Any]:
    """The lease columns for a (schema-checked) ``lease`` field: its
    end (naive UTC) and duration; a duration alone starts ``now``; None
    (no lease) clears them.  :class:`Invalid` (400) for a value that is
    not a timestamp or a duration."""
    if document is None:
        return {"lease_expires_at": None, "lease_duration": None}
    duration = document.get("duration")
    end = document.get("expires_at")
    try:
        if duration is not None:
            duration = leases.format_duration(leases.parse_duration(duration))
        if end is None:
            if duration is None:
                raise leases.LeaseError(
                    "a lease needs expires_at or duration")
            moment = now + leases.parse_duration(duration)
        else:
            moment = leases.parse_timestamp(end)
    except leases.LeaseError as exc:
        raise Invalid(f"Invalid lease: {exc}") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.timezone.utc).replace(
            tzinfo=None)
    return {"lease_expires_at": moment.replace(microsecond=0),
            "lease_duration": duration}


def create_columns(body: dict[str, Any], opted: Shown,
                   now: datetime.datetime) -> dict[str, Any]:
    """The columns a (schema-checked) create's ``group`` and ``lease``
    fields set (each accepted only when opted into); without a ``lease``
    field, a lease an older client wrote into ``extra``
    (:func:`written_lease`)."""
    columns: dict[str, Any] = {}
    group = body.get(groups.FIELD) if opted.group else None
    if group is not None:
        columns["group_name"] = group["name"]
        columns["group_size"] = group["size"]
    if opted.lease and body.get(leases.FIELD) is not None:
        columns.update(lease_columns(body[leases.FIELD], now))
    else:
        columns.update(written_lease(body.get("extra")) or {})
    return columns


def written_lease(extra: Any) -> dict[str, Any] | None:
    """The lease columns of a lease written as keys of ``extra`` (what
    older SDKs, and any client following their documentation, write):
    such a lease still expires.  The keys stay in ``extra``, as written;
    None when ``extra`` records no readable lease."""
    if not isinstance(extra, dict) or leases.EXPIRES_KEY not in extra:
        return None
    duration = extra.get(leases.DURATION_KEY)
    try:
        end = leases.parse_timestamp(extra[leases.EXPIRES_KEY])
        if isinstance(duration, str):
            leases.parse_duration(duration)
        else:
            duration = None
    except leases.LeaseError:
        return None
    end = end.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return {"lease_expires_at": end.replace(microsecond=0),
            "lease_duration": duration}


def _moment(value: datetime.datetime | str) -> datetime.datetime:
    """A stored end: a ``datetime``, or SQLite's text of one."""
    if isinstance(value, str):
        return datetime.datetime.fromisoformat(value)
    return value


def lease_document(expires_at: datetime.datetime | str | None,
                   duration: str | None) -> dict[str, Any] | None:
    """The ``lease`` field of stored columns (None: no lease)."""
    if expires_at is None:
        return None
    end = _moment(expires_at).replace(tzinfo=datetime.timezone.utc)
    return {"expires_at": leases.format_timestamp(end),
            "duration": duration}


def group_document(name: str | None, size: int | None
                   ) -> dict[str, Any] | None:
    """The ``group`` field of stored columns (None: no group)."""
    return None if name is None else {"name": name, "size": size}


def as_marks(record: Any) -> dict[str, Any]:
    """An allocation's lease as the mapping :mod:`baremetal_allocclient.
    leases` reads (the keys the SDK uses on real Ironic)."""
    lease = lease_document(record.lease_expires_at, record.lease_duration)
    if lease is None:
        return {}
    marks = {leases.EXPIRES_KEY: lease["expires_at"]}
    if lease["duration"] is not None:
        marks[leases.DURATION_KEY] = lease["duration"]
    return marks


def lease_columns_of(lease: dict[str, Any]) -> dict[str, Any]:
    """The lease columns of a lease recorded as the SDK's keys
    (:func:`leases.lease_extra`), e.g. a lease written by an older
    client."""
    return lease_columns({"expires_at": lease[leases.EXPIRES_KEY],
                          "duration": lease.get(leases.DURATION_KEY)},
                         datetime.datetime.now(datetime.timezone.utc))
