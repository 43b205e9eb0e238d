"""Reserve a whole group of allocations in one transaction.

:func:`reserve_group` locks ``count`` free matching nodes (skipping
nodes other transactions hold locked), inserts the ``count``
allocations ``active`` and gives each one its node with the
reservation's compare-and-set, all in one write transaction: either the
whole group is committed or nothing is.  Locks follow the one order,
nodes first; the allocations are new rows.  Two groups racing for the
last nodes never both end half-served: each transaction commits only
with all of its nodes, and a node locked by one is skipped by the other.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Sequence

from sqlalchemy import ColumnElement
from sqlalchemy.orm import Session

from baremetal_allocclient.server.db import queries
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Allocation, utcnow
from baremetal_allocclient.server.logic import selection
from baremetal_allocclient.server.logic.selection import AnyFilter, Request

#: Attempts when matching nodes exist but other transactions hold them
#: (locked or taken meanwhile) before the group fails.
ROUNDS = 5
#: Pause between attempts (seconds, times the attempt number, jittered).
PAUSE = 0.02
_JITTER = random.SystemRandom()


@dataclasses.dataclass(frozen=True)
class Outcome:
    """The committed members with their node UUIDs, or why none."""

    members: tuple[tuple[Allocation, str], ...] = ()
    reason: str | None = None


class _Short(Exception):
    """Internal: fewer nodes than members; roll the transaction back."""


def reserve_group(
    db: Database,
    count: int,
    build: Callable[[], list[Allocation]],
    request: Request,
    visible: ColumnElement[bool] | None,
    *,
    check: Callable[[Session], None] = lambda _session: None,
    rng: random.Random = _JITTER,
) -> Outcome:
    """Commit the ``count`` members ``build`` makes (new rows,
    ``active``; built again for each attempt) each on its own node, or
    nothing.  ``check`` runs first inside each transaction
    (uniqueness checks raise there); ``visible`` restricts the nodes
    counted when explaining a shortfall to the caller."""
    filters = selection.active_filters(request)
    for attempt in range(ROUNDS):
        try:
            with db.write() as session:
                check(session)
                members = build()
                return Outcome(_reserve(session, members, request, filters,
                                        rng))
        except _Short:
            pass
        with db.read() as session:
            reason = shortfall(session, request, filters, count, visible)
        if reason is not None:
            return Outcome(reason=reason)
        time.sleep(rng.uniform(0.5, 1.5) * PAUSE * (attempt + 1))
    return Outcome(reason=(
        f"the matching nodes were taken by concurrent requests "
        f"({ROUNDS} attempts)"))


def _reserve(session: Session, members: Sequence[Allocation],
             request: Request, filters: Sequence[AnyFilter],
             rng: random.Random) -> tuple[tuple[Allocation, str], ...]:
    count = len(members)
    top = queries.highest_node_id(session)
    nodes = queries.lock_free_nodes(session, request, filters,
                                    rng.randint(1, max(top, 1)), count)
    if len(nodes) < count:
        raise _Short()
    now = utcnow()
    for member, node in zip(members, nodes, strict=True):
        member.node_id = node.id
        member.created_at = member.updated_at = now
        queries.insert_allocation(session, member)
        if not queries.give_node(session, member, node.id, request,
                                 filters, now):
            raise _Short()
    return tuple((m, n.uuid) for m, n in zip(members, nodes, strict=True))


def shortfall(session: Session, request: Request,
              filters: Sequence[AnyFilter], count: int,
              visible: ColumnElement[bool] | None) -> str | None:
    """Why ``count`` nodes cannot be had, or None when enough match and
    are free (they were only locked or taken by concurrent requests)."""
    counts = queries.cumulative_counts(session, request, list(filters))
    free = counts[-1]
    if free >= count:
        return None
    funnel = queries.funnel_counts(session, request, visible)
    emptied = selection.first_empty(request, counts)
    reason = f"{free} of the {count} nodes needed are available"
    if emptied is not None:
        reason += f" ({selection.empty_reason(request, emptied)})"
    return selection.with_funnel(reason, funnel)
