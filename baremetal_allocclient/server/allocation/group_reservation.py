"""Reserve a whole group of allocations in one transaction.

:func:`reserve_group` locks ``count`` free matching nodes (skipping
nodes other transactions hold locked), inserts the ``count``
allocations ``active`` and gives each one its node with the
reservation's compare-and-set, all in one write transaction: either the
whole group is committed or nothing is.  Locks follow the one order,
nodes first; the allocations are new rows.  Two groups racing for the
last nodes never both end half-served: each transaction commits only
with all of its nodes, and a node locked by one is skipped by the other.

First come, first served holds for groups too: a group arrives after
every allocation already waiting in line, so it never takes a node one
of them gets first (:func:`queries.promised_nodes`); it locks that many
more candidates, and the nodes promised count as unavailable when the
group is refused.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import ColumnElement
from sqlalchemy.orm import Session

from baremetal_allocclient import constraints
from baremetal_allocclient.constraints import Order
from baremetal_allocclient.server.allocation import (
    matching,
    reservation,
    selection,
    spreading,
)
from baremetal_allocclient.server.allocation.line import queries
from baremetal_allocclient.server.allocation.release.refusals import Holder
from baremetal_allocclient.server.allocation.selection import (
    AnyFilter,
    Request,
)
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Allocation, utcnow
from baremetal_allocclient.spread import Spread

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
    #: With a spread: members and free nodes per domain
    #: (:meth:`spread.Placement.as_dict`).
    placement: dict[str, Any] | None = None


class _Short(Exception):
    """Internal: fewer nodes than members; roll the transaction back.
    ``promised``: free matching nodes kept for allocations in line."""

    def __init__(self, promised: int = 0) -> None:
        super().__init__(promised)
        self.promised = promised
        self.refusal: str | None = None  # (as spreading.Unplaced's)


def reserve_group(
    db: Database,
    count: int,
    build: Callable[[], list[Allocation]],
    request: Request,
    visible: ColumnElement[bool] | None,
    *,
    check: Callable[[Session], None] = lambda _session: None,
    rng: random.Random = _JITTER,
    holder: Holder | None = None,
    spread: Spread | None = None,
    order: Order = Order.FIRST_FIT,
) -> Outcome:
    """Commit the ``count`` members ``build`` makes (new rows,
    ``active``; built again for each attempt) each on its own node, or
    nothing.  ``check`` runs first inside each transaction
    (uniqueness checks raise there); ``visible`` restricts the nodes
    counted when explaining a shortfall to the caller.  With a
    ``holder`` (Ironic behind the broker), every member's node is also
    claimed there, with the nodes locked, before the commit; a claim
    refused is a node taken, and claims whose transaction did not commit
    are removed.  With a ``spread`` the members' nodes are chosen by
    :func:`spread.choose` over the free matching nodes, in the same
    transaction; ``order``: the order nodes are tried in."""
    filters = selection.active_filters(request)
    for attempt in range(ROUNDS):
        claimed: list[str] = []
        placement: dict[str, Any] | None = None
        try:
            with db.write() as session:
                check(session)
                members = build()
                if spread is None:
                    reserved = _reserve(session, members, request, filters,
                                        rng, order)
                else:
                    reserved, placement = spreading.reserve_spread(
                        session, members, request, filters, rng, spread,
                        order)
                if holder is not None:
                    _claim_all(holder, reserved, request)
                    claimed = [member.uuid for member, _node in reserved]
            return Outcome(reserved, placement=placement)
        except (_Short, spreading.Unplaced) as short:
            promised = short.promised
            if short.refusal is not None:
                return _refused(db, request, visible, short.refusal)
        except BaseException:
            if claimed and holder is not None:
                holder.unclaim_all(claimed)
            raise
        with db.read() as session:
            # A spread's own reason, or none: the nodes it chose were
            # held or taken by others, and others are left to choose.
            reason = spreading.refusal(
                session, request, filters, spread, count) \
                if spread is not None else \
                shortfall(session, request, count, visible, promised)
        if reason is not None and spread is not None:
            return _refused(db, request, visible, reason)
        if reason is not None:
            return Outcome(reason=reason)
        time.sleep(rng.uniform(0.5, 1.5) * PAUSE * (attempt + 1))
    return Outcome(reason=(
        f"the matching nodes were taken by concurrent requests "
        f"({ROUNDS} attempts)"))


def _refused(db: Database, request: Request,
             visible: ColumnElement[bool] | None, reason: str) -> Outcome:
    """A spread the free nodes cannot satisfy: its reason with the
    funnel."""
    if visible is None:
        visible = matching.visible_to(request.owner)
    with db.read() as session:
        funnel = matching.funnel_counts(session, request, visible)
    return Outcome(reason=constraints.with_funnel(reason, funnel))


def _claim_all(holder: Holder, reserved: Sequence[tuple[Allocation, str]],
               request: Request) -> None:
    """The holder's claims of every member's node (_Short: one refused,
    none left)."""
    if not holder.claim_all([(m.uuid, node) for m, node in reserved],
                            request.resource_class, request.traits,
                            request.owner):
        raise _Short()


def _reserve(session: Session, members: Sequence[Allocation],
             request: Request, filters: Sequence[AnyFilter],
             rng: random.Random, order: Order = Order.FIRST_FIT
             ) -> tuple[tuple[Allocation, str], ...]:
    count = len(members)
    now = utcnow()
    waiting = queries.in_line(session, request.resource_class, now)
    # Each allocation in line is promised at most one node: locking that
    # many more leaves ``count`` for the group whenever there are enough.
    if order is Order.BEST_FIT:
        locked = reservation.lock_best_fit_nodes(
            session, request, filters, count + len(waiting))
    else:
        top = matching.highest_node_id(session)
        locked = reservation.lock_free_nodes(
            session, request, filters, rng.randint(1, max(top, 1)),
            count + len(waiting))
    promised = queries.promised_nodes(session, [n.id for n in locked],
                                      waiting)
    nodes = [n for n in locked if n.id not in promised][:count]
    if len(nodes) < count:
        raise _Short(len(promised))
    for member, node in zip(members, nodes, strict=True):
        member.node_id = node.id
        member.created_at = member.updated_at = now
        reservation.insert_allocation(session, member)
        if not reservation.give_node(session, member, node.id, request,
                                 filters, now):
            raise _Short()
    return tuple((m, n.uuid) for m, n in zip(members, nodes, strict=True))


def shortfall(session: Session, request: Request, count: int,
              visible: ColumnElement[bool] | None,
              promised: int = 0) -> str | None:
    """Why ``count`` nodes cannot be had, or None when enough match and
    are free (they were only locked or taken by concurrent requests).
    ``promised`` of the free ones are kept for allocations waiting in
    line, which arrived first."""
    if visible is None:
        visible = matching.visible_to(request.owner)
    funnel = matching.funnel_counts(session, request, visible)
    free = max(funnel.candidates - promised, 0)
    if free >= count:
        return None
    emptied = constraints.empty_step(request.selection, funnel)
    reason = f"{free} of the {count} nodes needed are available"
    if promised:
        reason += (f" ({promised} more promised to allocations waiting "
                   f"in line, which came first)")
    elif emptied is not None:
        reason += f" ({constraints.reason(request.selection, emptied)})"
    return constraints.with_funnel(reason, funnel)
