"""Leases: an allocation's expiry (pure).

Shared by the SDK, the command line and the reference server (standard
library only), so that every one of them reads and writes a lease the same
way.  On the reference server a lease is the allocation's ``lease`` field
(``{"expires_at": ..., "duration": ...}``), shown only to a request that
opts into the extension, so ``extra`` stays exactly as the user wrote it.
On real Ironic, where ``extra`` is the only place, it is two string values
of ``extra`` under the SDK's one prefix (``baremetal_alloc:``).  The
functions here read a mapping of those two keys (the SDK's
``Allocation.marks``, see :mod:`baremetal_allocclient.marks`):

``baremetal_alloc:lease_expires_at``
    When the lease ends: an ISO 8601 UTC timestamp with whole seconds,
    ``2030-01-02T03:04:05Z``.  The only key that decides anything.
``baremetal_alloc:lease``
    The duration last asked for (``2h``, ``1h30m``): for people reading
    the allocation, and used for one thing: the lease of an allocation
    that waited in line starts again when it gets its node
    (:func:`restarted`).

Durations are written ``<n>d``, ``<n>h``, ``<n>m``, ``<n>s`` or a
combination in that order (``1d12h``, ``1h30m``, ``90s``).
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import re
from collections.abc import Mapping
from typing import Any, Final

#: The ``extra`` key holding the lease's end (ISO 8601, UTC).
EXPIRES_KEY: Final = "baremetal_alloc:lease_expires_at"
#: The ``extra`` key holding the duration last asked for (informative).
DURATION_KEY: Final = "baremetal_alloc:lease"
#: Name of the reference server's extension (``GET /v1`` ``extensions``;
#: a request opts in with ``X-Baremetal-Alloc-Extensions: leases``).
EXTENSION: Final = "leases"
#: The allocation's field holding the lease on the reference server.
FIELD: Final = "lease"
#: The longest lease: one year (a typo such as ``1000d`` is refused).
MAX_DURATION: Final = datetime.timedelta(days=366)
#: What ``--lease`` accepts, for usage messages.
DURATION_RULE: Final = (
    "a duration such as 90s, 30m, 2h, 1d or 1h30m (units d, h, m, s, "
    "each at most once, in that order; a bare number is seconds)"
)

_UNITS: Final = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
#: ASCII digits only (``\d`` would take other scripts' digits, which
#: ``int`` accepts); ``\Z``, not ``$``, so a trailing newline is refused.
_DURATION_RE: Final = re.compile(
    r"(?:(?P<d>[0-9]{1,6})d)?(?:(?P<h>[0-9]{1,6})h)?"
    r"(?:(?P<m>[0-9]{1,9})m)?(?:(?P<s>[0-9]{1,9})s)?\Z"
)


class LeaseError(ValueError):
    """A duration or a recorded expiry that cannot be used."""


def parse_duration(text: str) -> datetime.timedelta:
    """``"1h30m"`` -> ``timedelta(hours=1, minutes=30)``.

    Raises:
        LeaseError: not a duration (the message says what is), zero, or
            longer than :data:`MAX_DURATION`.
    """
    if not isinstance(text, str):
        raise LeaseError(f"expected {DURATION_RULE}, got {text!r}")
    seconds = duration_seconds(text, "lease")
    return check_duration(datetime.timedelta(seconds=seconds))


def duration_seconds(text: str, what: str = "duration") -> int:
    """Seconds in ``"90"``, ``"90s"``, ``"30m"``, ``"1h30m"``... (a bare
    number is seconds); the one duration syntax of every option.

    Raises:
        LeaseError: not a duration (the message says what is).
    """
    stripped = text.strip().lower()
    if stripped.isascii() and stripped.isdigit() and len(stripped) <= 9:
        return int(stripped)
    match = _DURATION_RE.match(stripped)
    if match is None or not any(match.groupdict().values()):
        raise LeaseError(f"invalid {what} {text!r}: expected {DURATION_RULE}")
    return sum(int(match.group(unit) or 0) * size for unit, size in _UNITS)


def check_duration(duration: datetime.timedelta) -> datetime.timedelta:
    """A lease length must be positive and at most :data:`MAX_DURATION`."""
    if duration <= datetime.timedelta(0):
        raise LeaseError("a lease must be longer than zero")
    if duration > MAX_DURATION:
        raise LeaseError(
            f"a lease may be at most {format_duration(MAX_DURATION)}, got "
            f"{format_duration(duration)}"
        )
    return duration


def as_duration(lease: datetime.timedelta | str) -> datetime.timedelta:
    """A ``timedelta`` or a duration string, checked."""
    if isinstance(lease, datetime.timedelta):
        return check_duration(lease)
    return parse_duration(lease)


def format_duration(duration: datetime.timedelta) -> str:
    """The canonical text of a duration (whole seconds, rounded up):
    ``timedelta(minutes=90)`` -> ``"1h30m"``."""
    left = math.ceil(duration.total_seconds())
    parts = []
    for unit, size in _UNITS:
        count, left = divmod(left, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"


def format_timestamp(moment: datetime.datetime) -> str:
    """``2030-01-02T03:04:05Z``: UTC, whole seconds (rounded up)."""
    moment = moment.astimezone(datetime.timezone.utc)
    if moment.microsecond:
        moment = moment.replace(microsecond=0) + datetime.timedelta(seconds=1)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(text: Any) -> datetime.datetime:
    """An ISO 8601 timestamp; naive values are taken as UTC.

    Raises:
        LeaseError: not a string, or not ISO 8601.
    """
    if not isinstance(text, str):
        raise LeaseError(f"expected an ISO 8601 timestamp, got {text!r}")
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise LeaseError(
            f"expected an ISO 8601 timestamp, got {text!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment


def utcnow() -> datetime.datetime:
    """The current time, timezone-aware UTC."""
    return datetime.datetime.now(datetime.timezone.utc)


def lease_extra(
    lease: datetime.timedelta | str, now: datetime.datetime
) -> dict[str, str]:
    """The ``extra`` keys recording a lease of ``lease`` from ``now``."""
    duration = as_duration(lease)
    return {
        EXPIRES_KEY: format_timestamp(now + duration),
        DURATION_KEY: format_duration(duration),
    }


def with_lease(
    extra: Mapping[str, Any] | None,
    lease: datetime.timedelta | str | None,
    now: datetime.datetime,
) -> dict[str, Any] | None:
    """``extra`` with a lease recorded (unchanged without ``lease``)."""
    if lease is None:
        return dict(extra) if extra is not None else None
    return {**(extra or {}), **lease_extra(lease, now)}


def restarted(
    extra: Mapping[str, Any] | None, now: datetime.datetime
) -> dict[str, Any] | None:
    """``extra`` with its lease running from ``now`` for the recorded
    duration: a lease starts when its allocation gets a node, so time
    spent waiting in line does not eat it.  None when there is no lease
    or its duration cannot be read (the recorded end then stays)."""
    if not extra or EXPIRES_KEY not in extra:
        return None
    recorded = extra.get(DURATION_KEY)
    try:
        duration = parse_duration(recorded if isinstance(recorded, str)
                                  else "")
    except LeaseError:
        return None
    if now.tzinfo is None:
        now = now.replace(tzinfo=datetime.timezone.utc)
    return {**extra, **lease_extra(duration, now)}


def expires_at(extra: Mapping[str, Any] | None) -> datetime.datetime | None:
    """The recorded end of the lease; None when there is no lease.

    Raises:
        LeaseError: the key holds something that is not a timestamp.
    """
    if not extra or EXPIRES_KEY not in extra:
        return None
    return parse_timestamp(extra[EXPIRES_KEY])


def is_expired(
    extra: Mapping[str, Any] | None, now: datetime.datetime
) -> bool:
    """Whether the lease ended at or before ``now``.  No lease, or one
    that cannot be read, never expires (nothing is released on a guess).
    """
    try:
        end = expires_at(extra)
    except LeaseError:
        return False
    return end is not None and end <= now


# -- what to do with an expired lease -----------------------------------

#: Provision states of a node that holds a deployed (or deploying)
#: instance: its allocation is left alone unless undeploying is asked for.
DEPLOYED_STATES: Final = frozenset({
    "active", "deploying", "wait call-back", "deploy failed",
    "rescue", "rescuing", "rescue wait", "rescue failed",
    "unrescuing", "unrescue failed", "deploy hold",
})


class Action:
    """What expiring does with one allocation (string constants)."""

    RELEASE: Final = "release"
    """Delete the allocation: its node was never deployed (or it has
    none, e.g. an ``error`` allocation)."""
    DEPLOYED: Final = "deployed"
    """Leave it and report it: the node is deployed."""
    UNDEPLOY: Final = "undeploy"
    """Tear the node down (asked for); Ironic then deletes the
    allocation itself when the tear-down finishes."""
    BUSY: Final = "busy"
    """Leave it this round: the node is in the middle of a transition,
    or the allocation is still ``allocating``."""
    KEEP: Final = "keep"
    """Nothing to do: no lease, a lease not yet ended, or one that
    cannot be read."""


@dataclasses.dataclass(frozen=True)
class NodeFacts:
    """What the decision needs of a node."""

    provision_state: str | None
    target_provision_state: str | None = None


def decide(
    state: str | None,
    extra: Mapping[str, Any] | None,
    node: NodeFacts | None,
    now: datetime.datetime,
    *,
    undeploy: bool = False,
) -> str:
    """The :class:`Action` for one allocation (pure).

    ``node`` is None when the allocation holds no node.
    """
    if not is_expired(extra, now):
        return Action.KEEP
    if state == "allocating":
        return Action.BUSY
    if node is None:
        return Action.RELEASE
    if node.target_provision_state:
        # In the middle of a transition: a deploy or rescue under way is
        # reported; anything else waits for the next round.  A node is
        # never torn down in the middle of a transition.
        if node.provision_state in DEPLOYED_STATES:
            return Action.DEPLOYED
        return Action.BUSY
    if node.provision_state in DEPLOYED_STATES:
        return Action.UNDEPLOY if undeploy else Action.DEPLOYED
    return Action.RELEASE
