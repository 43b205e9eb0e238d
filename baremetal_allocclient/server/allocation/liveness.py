"""Pure decisions about conductors: who is dead, what to take over.

No I/O here: the database layer reads the rows and the database clock,
these functions decide, and the table tests cover every branch.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ConductorState:
    """One registration as read from the ``conductors`` table."""

    name: str
    online: bool
    heartbeat_at: datetime.datetime


def is_dead(
    conductor: ConductorState,
    now: datetime.datetime,
    timeout: datetime.timedelta,
) -> bool:
    """Stopped gracefully (offline) or silent for longer than timeout."""
    return not conductor.online or now - conductor.heartbeat_at > timeout


def orphaned_affinities(
    affinities: Iterable[str | None],
    conductors: Iterable[ConductorState],
    now: datetime.datetime,
    timeout: datetime.timedelta,
    me: str,
) -> list[str | None]:
    """Affinities of ``allocating`` rows that nobody alive will finish.

    An affinity is orphaned when its conductor is dead, was never
    registered, or is missing (``None``).  ``me`` is never orphaned, even
    when this process's own heartbeat lags: a process must not take over
    its own allocations (its workers may still be running them); its own
    leftovers are resumed instead.
    """
    alive = {
        c.name for c in conductors if not is_dead(c, now, timeout)
    }
    alive.add(me)
    orphans = {a for a in affinities if a not in alive}
    return sorted(orphans, key=lambda a: (a is not None, a or ""))


def takeover_plan(
    orphans: Mapping[str | None, int], free_slots: int
) -> list[tuple[str | None, int]]:
    """How many allocations to claim from each orphaned affinity.

    Never more than the free worker slots, so whatever is claimed is
    processed at once and nothing is claimed only to wait; the rest stays
    with the dead affinity for the next round or another process.
    """
    plan: list[tuple[str | None, int]] = []
    remaining = max(free_slots, 0)
    for affinity in sorted(orphans, key=lambda a: (a is not None, a or "")):
        if remaining == 0:
            break
        count = min(orphans[affinity], remaining)
        if count > 0:
            plan.append((affinity, count))
            remaining -= count
    return plan

