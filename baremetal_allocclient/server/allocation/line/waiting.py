"""Waiting in line (the queue extension): the pure decisions.

An allocation that asked to wait stays ``allocating`` while no matching
node is free, in a first-come-first-served line per resource class, in
arrival (creation, that is id) order, until its queue deadline.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping, Sequence, Set
from typing import Any

#: Longest wait a server grants by default (``serve --max-queue-wait``).
DEFAULT_MAX_WAIT = 3600.0
#: Seconds between this process's rounds over its waiting allocations
#: (``serve --queue-interval``); a release in this process wakes the
#: round at once.
DEFAULT_INTERVAL = 1.0


class QueueRequestError(ValueError):
    """The ``queue`` field of a create cannot be honoured."""


def deadline_for(
    now: datetime.datetime,
    document: Mapping[str, Any],
    ceiling: float,
) -> datetime.datetime:
    """When a waiting allocation gives up: ``now`` plus the requested
    ``timeout`` (seconds), or plus ``ceiling`` without one.  A request
    above the ceiling is refused rather than silently shortened, so a
    client never believes it waits longer than it does."""
    timeout = document.get("timeout")
    if timeout is None:
        seconds = ceiling
    else:
        seconds = float(timeout)
        if not math.isfinite(seconds) or seconds <= 0:
            raise QueueRequestError(
                "queue timeout must be a positive number of seconds")
        if seconds > ceiling:
            raise QueueRequestError(
                f"queue timeout {seconds:g} s exceeds this server's "
                f"maximum of {ceiling:g} s")
    return now + datetime.timedelta(seconds=seconds)


def expired(deadline: datetime.datetime | None,
            now: datetime.datetime) -> bool:
    """Whether a waiting allocation's time in line is up."""
    return deadline is not None and now >= deadline


def expiry_reason(resource_class: str | None,
                  created_at: datetime.datetime | None,
                  deadline: datetime.datetime) -> str:
    """``last_error`` reason of an allocation whose queue deadline
    passed (wrapped in Ironic's "Failed to process allocation" words)."""
    waited = ""
    if created_at is not None:
        seconds = max(0.0, (deadline - created_at).total_seconds())
        waited = f" after waiting {seconds:.0f} s"
    return (f"no available node matching the request became free in "
            f"resource class {resource_class} before the queue deadline "
            f"{deadline.isoformat(timespec='seconds')}Z{waited}")


def view(deadline: datetime.datetime, position: int) -> dict[str, Any]:
    """The ``queue`` object shown to clients that opted in: the deadline
    and the 1-based position in the resource class's line."""
    return {"deadline": deadline.isoformat(timespec="seconds") + "+00:00",
            "position": position}


def promise(nodes: Sequence[int], matches: Sequence[Set[int]]) -> set[int]:
    """The nodes promised to allocations waiting in line (pure).

    ``matches[i]`` holds the nodes the ``i``-th allocation in line (in
    arrival order) matches.  Each is promised one node, as many of them
    as the nodes allow, earlier ones first (a maximum matching, grown in
    arrival order by augmenting paths, which never unmatch one already
    served).  What is left may go to a request that arrived after all of
    them (a group): it never takes a node they need.
    """
    owner: dict[int, int] = {}  # node -> index of the one in line

    def seat(who: int, seen: set[int]) -> bool:
        for node in nodes:
            if node in matches[who] and node not in seen:
                seen.add(node)
                if node not in owner or seat(owner[node], seen):
                    owner[node] = who
                    return True
        return False

    for who in range(len(matches)):
        seat(who, set())
    return set(owner)
