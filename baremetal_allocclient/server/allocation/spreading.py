"""A group's members spread over failure domains, inside the group's one
write transaction (:func:`group_reservation.reserve_group`).

The free matching nodes are read with their domain (conductor group,
shard or a property's text) in the order to try them (shuffled, or
best fit); :func:`baremetal_allocclient.spread.choose` decides which
ones the members take; those are then locked (skipping nodes other
transactions hold) and given to the members with the reservation's
compare-and-set.  A chosen node another transaction holds is left out
and the choice made again, in the same transaction, from the nodes
left.  Correctness does not rest on the read: each member's node is
locked and re-checked free and matching before it is taken, and the
spread is decided over the nodes actually taken.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from typing import Any, cast

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Integer,
    Select,
    bindparam,
    func,
    select,
)
from sqlalchemy.orm import Session

from baremetal_allocclient.constraints import Order
from baremetal_allocclient.server.allocation import matching, reservation
from baremetal_allocclient.server.allocation.line import queries
from baremetal_allocclient.server.allocation.selection import (
    AnyFilter,
    Request,
)
from baremetal_allocclient.server.db.models import (
    Allocation,
    Node,
    NodeProperty,
    utcnow,
)
from baremetal_allocclient.spread import Placement, Spread, choose

#: Times a choice is made again within one transaction when other
#: transactions hold some of the chosen nodes.
RECHOOSE = 3

#: Free matching nodes a first-fit group reads first, from a random
#: place; all of them only when those cannot place the members.
WINDOW = 256

#: (id, uuid, domain, name) of a free matching node.
Row = tuple[int, str, str | None, str | None]


class Unplaced(Exception):
    """The members could not be placed: ``refusal`` says why when the
    free nodes cannot satisfy the spread (final), None when other
    transactions held or took chosen nodes (try again)."""

    def __init__(self, promised: int = 0,
                 refusal: str | None = None) -> None:
        super().__init__(refusal)
        self.promised = promised
        self.refusal = refusal


def _domain_column(over: str) -> ColumnElement[Any]:
    if over == "conductor_group":
        return func.lower(Node.conductor_group)
    if over == "shard":
        return Node.shard.expression
    key = over.split(":", 1)[1]
    return (select(NodeProperty.text)
            .where(NodeProperty.node_id == Node.id, NodeProperty.key == key)
            .scalar_subquery())


@functools.lru_cache(maxsize=256)
def _free_query(filters: tuple[AnyFilter, ...], over: str) -> Select[Any]:
    """Every free node passing the filters, with its domain, by id."""
    return cast("Select[Any]", select(
        Node.id, Node.uuid, _domain_column(over), Node.name,
    ).where(*matching.predicates(filters)).order_by(Node.id))


@functools.lru_cache(maxsize=256)
def _window_query(filters: tuple[AnyFilter, ...], over: str, before: bool
                  ) -> Select[Any]:
    """Up to ``w_limit`` free matching nodes with their domain from id
    ``w_pivot`` on (``before``: below it), by id."""
    pivot: BindParameter[int] = bindparam("w_pivot")
    position = Node.id < pivot if before else Node.id >= pivot
    return _free_query(filters, over).where(position).limit(
        bindparam("w_limit", type_=Integer))


def window_nodes(session: Session, request: Request,
                 filters: Sequence[AnyFilter], spread: Spread,
                 rng: random.Random, limit: int = WINDOW) -> list[Row]:
    """Up to ``limit`` free matching nodes with their domain from a
    random node id on, wrapping around, shuffled."""
    conn = session.connection()
    key = tuple(filters)
    params = {**matching.filter_params(request), "w_limit": limit,
              "w_pivot": rng.randint(1, max(matching.highest_node_id(
                  session), 1))}
    found = list(conn.execute(_window_query(key, spread.over, False),
                              params))
    if len(found) < limit:
        found += conn.execute(_window_query(key, spread.over, True),
                              {**params, "w_limit": limit - len(found)})
    rows: list[Row] = [(int(r[0]), str(r[1]), r[2], r[3]) for r in found]
    rng.shuffle(rows)
    return rows


def free_nodes(session: Session, request: Request,
               filters: Sequence[AnyFilter], spread: Spread,
               order: Order, rng: random.Random) -> list[Row]:
    """The free matching nodes with their domain, in the order to try
    them: best fit's, or shuffled (concurrent groups rarely collide)."""
    conn = session.connection()
    rows: list[Row] = [
        (int(r[0]), str(r[1]), r[2], r[3]) for r in conn.execute(
            _free_query(tuple(filters), spread.over),
            matching.filter_params(request))]
    if order is Order.BEST_FIT:
        ranked = matching.best_fit_rows(session, request, filters,
                                        len(rows) or 1)
        rank = {row[0]: index for index, row in enumerate(ranked)}
        rows.sort(key=lambda r: rank.get(r[0], len(rank)))
    else:
        rng.shuffle(rows)
    return rows


@functools.lru_cache(maxsize=256)
def _domains_query(over: str) -> Select[Any]:
    return cast("Select[Any]", select(_domain_column(over)).where(
        Node.resource_class == bindparam("f_resource_class")).distinct())


def known_domains(session: Session, request: Request, spread: Spread
                  ) -> list[str | None]:
    """Every domain of the resource class's nodes (free or not), so
    that a refusal names the domains with no free node too."""
    rows = session.connection().execute(
        _domains_query(spread.over),
        {"f_resource_class": request.resource_class})
    return [row[0] for row in rows]


def _lock(session: Session, ids: Sequence[int]) -> set[int]:
    """Lock these nodes, skipping those another transaction holds; the
    ids locked."""
    if not ids:
        return set()
    locked = session.connection().execute(
        select(Node.id).where(Node.id.in_(list(ids)))
        .order_by(Node.id).with_for_update(skip_locked=True))
    return {int(row[0]) for row in locked}


def _domain(row: Row) -> str | None:
    return row[2]


def place(session: Session, rows: list[Row], spread: Spread, count: int,
          known: Callable[[], Sequence[str | None]] = tuple
          ) -> Placement[Row]:
    """Choose and lock the members' nodes; :class:`Unplaced` when the
    free nodes cannot satisfy the spread (refusal, with every ``known``
    domain named) or other transactions hold too many of the chosen
    ones (try again)."""
    first = choose(spread, count, rows, _domain)
    if not first.placed:
        refused = choose(spread, count, rows, _domain, known())
        raise Unplaced(refusal=refused.reason())
    placement = first
    for _ in range(RECHOOSE):
        wanted = [row[0] for row in placement.chosen]
        held = set(wanted) - _lock(session, wanted)
        if not held:
            return placement
        rows = [row for row in rows if row[0] not in held]
        placement = choose(spread, count, rows, _domain)
        if not placement.placed:
            break
    raise Unplaced()


def refusal(session: Session, request: Request,
            filters: Sequence[AnyFilter], spread: Spread, count: int
            ) -> str | None:
    """Why the free matching nodes (as committed now) cannot place the
    members, or None when they can (the chosen ones were only held by
    other transactions: try again)."""
    rows = free_nodes(session, request, filters, spread, Order.FIRST_FIT,
                      random.Random(0))  # noqa: S311 (order is irrelevant)
    placement = choose(spread, count, rows, _domain,
                       known_domains(session, request, spread))
    return None if placement.placed else placement.reason()


def _candidates(session: Session, request: Request,
                filters: Sequence[AnyFilter], spread: Spread, order: Order,
                rng: random.Random, count: int) -> list[Row]:
    """The free matching nodes to choose from: for first fit a random
    window when it can place the members (a create reads a bounded
    number of nodes), else every one (best fit scores them all)."""
    if order is Order.FIRST_FIT:
        rows = window_nodes(session, request, filters, spread, rng)
        if choose(spread, count, rows, _domain).placed:
            return rows
    return free_nodes(session, request, filters, spread, order, rng)


def reserve_spread(session: Session, members: Sequence[Allocation],
                   request: Request, filters: Sequence[AnyFilter],
                   rng: random.Random, spread: Spread, order: Order
                   ) -> tuple[tuple[tuple[Allocation, str], ...],
                              dict[str, Any]]:
    """Every member on its own node, spread as asked, in the caller's
    transaction; the members with their node UUIDs and the placement
    (members and free nodes per domain).  Nodes promised to allocations
    waiting in line are not taken."""
    count = len(members)
    now = utcnow()
    rows = _candidates(session, request, filters, spread, order, rng,
                       count)
    waiting = queries.in_line(session, request.resource_class, now)
    promised = queries.promised_nodes(session, [r[0] for r in rows],
                                      waiting)
    try:
        placement = place(session, [r for r in rows if r[0] not in promised],
                          spread, count,
                          lambda: known_domains(session, request, spread))
    except Unplaced as unplaced:
        raise Unplaced(len(promised), unplaced.refusal) from None
    for member, row in zip(members, placement.chosen, strict=True):
        member.node_id = row[0]
        member.created_at = member.updated_at = now
        reservation.insert_allocation(session, member)
        if not reservation.give_node(session, member, row[0], request,
                                     filters, now):
            raise Unplaced()
    reserved = tuple((m, row[1]) for m, row in
                     zip(members, placement.chosen, strict=True))
    return reserved, placement.as_dict()
