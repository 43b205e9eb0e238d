"""The waiting line (the queue extension) in SQL.

Functions whose first argument is a ``Database`` open their own read
transaction (``queued_rows``, ``free_node_count``); the others take the
caller's session or connection and open none.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import (
    Select,
    bindparam,
    exists,
    func,
    select,
)
from sqlalchemy.orm import Session

from baremetal_allocclient.server.allocation.line import waiting
from baremetal_allocclient.server.allocation.matching import (
    filter_params,
    predicates,
    request_of,
)
from baremetal_allocclient.server.allocation.selection import (
    AnyFilter,
    Filter,
    Request,
    active_filters,
)
from baremetal_allocclient.server.allocation.states import ALLOCATING
from baremetal_allocclient.server.db.allocation_row import AnyAllocation
from baremetal_allocclient.server.db.driver_statements import driver_statement
from baremetal_allocclient.server.db.engine import (
    Database,
)
from baremetal_allocclient.server.db.models import (
    Allocation,
    Node,
)
from baremetal_allocclient.server.db.planner_hints import unindexed

#: Allocations waiting in line in a resource class, still within their
#: deadline: read along ``allocations_queue_idx``, so a check costs what
#: the line holds, not what the class ever held.
_IN_LINE = (
    Allocation.state == ALLOCATING,
    Allocation.resource_class == bindparam("q_rc"),
    Allocation.queue_deadline.is_not(None),
    Allocation.queue_deadline > bindparam("q_now"),
)
#: In arrival order, which SQLite (no statistics) must not take from
#: ``allocations_resource_class_idx``: it would walk every allocation of
#: the class for the id order or range, instead of the few in line.
_arrival = unindexed(Allocation.id)
_EARLIER_IN_LINE = (
    select(*Allocation.__table__.columns)
    .where(*_IN_LINE, _arrival < bindparam("q_before"))
    .order_by(_arrival)
)
#: Whether an allocation that arrived before ``q_before`` waits in line
#: in ``q_rc``: a column of the reservation's lock, or a condition of
#: SQLite's one-statement reservation, so that the usual case (nobody in
#: line) costs no statement of its own; when one does,
#: :func:`waiting_before` reads who.
_SOMEONE_EARLIER_IN_LINE = exists().where(
    *_IN_LINE, _arrival < bindparam("q_before"))
NOBODY_WAITING_BEFORE = ~_SOMEONE_EARLIER_IN_LINE
ANYONE_WAITING_BEFORE = (
    _SOMEONE_EARLIER_IN_LINE.label("anyone_waiting_before")
)
_POSITION = select(func.count(Allocation.id)).where(
    *_IN_LINE, _arrival <= bindparam("q_before"))
_POSITION_AMONG = _POSITION.where(Allocation.owner == bindparam("q_owner"))


def _node_matches(conn: Any, node_id: int, request: Request) -> bool:
    """Whether the node passes every filter of ``request`` (the same SQL
    as the candidate query, for this one node)."""
    query = _node_query(tuple(active_filters(request)))
    return driver_statement(query, conn.dialect).first(
        conn, {**filter_params(request), "q_node": node_id}) is not None


@functools.cache
def _node_query(filters: tuple[AnyFilter, ...]) -> Select[Any]:
    return select(Node.id).where(Node.id == bindparam("q_node"),
                                 *predicates(filters))


_ALL_IN_LINE = (
    select(*Allocation.__table__.columns)
    .where(*_IN_LINE)
    .order_by(_arrival)
)
_MATCHING_NODES = select(Node.id).where(
    Node.id.in_(bindparam("q_nodes", expanding=True)))


def _matching_nodes(conn: Any, node_ids: Sequence[int], request: Request
                    ) -> set[int]:
    """Which of ``node_ids`` pass every filter of ``request`` (one
    query)."""
    filters = tuple(active_filters(request))
    query = _MATCHING_NODES.where(*predicates(filters))
    return {int(row[0]) for row in conn.execute(
        query, {**filter_params(request), "q_nodes": list(node_ids)})}


def in_line(session: Session, resource_class: str,
            now: datetime.datetime) -> list[Request]:
    """What every allocation waiting in line in ``resource_class`` asks
    for, in arrival order (read, not locked: the one lock order)."""
    rows = session.connection().execute(_ALL_IN_LINE, {
        "q_rc": resource_class, "q_now": now}).all()
    return [request_of(Allocation(**dict(row._mapping))) for row in rows]


def promised_nodes(session: Session, node_ids: Sequence[int],
                   waiters: Sequence[Request]) -> set[int]:
    """Which of ``node_ids`` (free, locked by the caller) the
    allocations ``waiters`` in line get first: each, in arrival order,
    is promised the first node it matches that no earlier one was
    (:func:`baremetal_allocclient.server.allocation.line.waiting.
    promise`)."""
    if not node_ids or not waiters:
        return set()
    conn = session.connection()
    matches = [_matching_nodes(conn, node_ids, request)
               for request in waiters]
    return waiting.promise(node_ids, matches)


def waiting_before(conn: Any, allocation_id: int, node_id: int,
                   resource_class: str, now: datetime.datetime) -> bool:
    """True when an allocation that arrived before ``allocation_id``
    waits in line in the same resource class and matches the node.

    Called by :func:`reserve` with the node locked, so no release or
    other reservation of it interleaves; the allocations in line are
    read, not locked (the one lock order is kept).  Reading one that
    settles meanwhile only makes the caller skip the node this time.
    """
    earlier_in_line = driver_statement(_EARLIER_IN_LINE, conn.dialect)
    rows = earlier_in_line.rows(conn, {
        "q_rc": resource_class, "q_now": now, "q_before": allocation_id,
    })
    for row in rows:
        earlier = Allocation(**earlier_in_line.row_type._make(row)._asdict())
        if _node_matches(conn, node_id, request_of(earlier)):
            return True
    return False


def queue_position(session: Session, allocation: AnyAllocation,
                   now: datetime.datetime, project: str | None = None
                   ) -> int:
    """1-based place of a waiting allocation in its resource class's
    line (one indexed count); with ``project``, counting only the
    allocations ahead that this project owns (all a member may see)."""
    return int(session.connection().scalar(
        _POSITION if project is None else _POSITION_AMONG, {
            "q_rc": allocation.resource_class, "q_now": now,
            "q_before": allocation.id, "q_owner": project,
        }) or 0)


def queued_rows(db: Database, affinity: str
                ) -> list[tuple[int, str, str | None,
                                datetime.datetime, datetime.datetime]]:
    """(id, uuid, resource class, deadline, created_at) of every
    allocation of ``affinity`` waiting in line, in arrival order."""
    query = (
        select(Allocation.id, Allocation.uuid, Allocation.resource_class,
               Allocation.queue_deadline, Allocation.created_at)
        .where(Allocation.state == ALLOCATING,
               Allocation.conductor_affinity == affinity,
               Allocation.queue_deadline.is_not(None))
        .order_by(Allocation.id)
    )
    with db.read() as session:
        return [(int(r[0]), str(r[1]), r[2], cast(datetime.datetime, r[3]),
                 r[4]) for r in session.execute(query)]


def free_node_count(db: Database, resource_class: str | None) -> int:
    """How many nodes of the class are free to allocate (before any
    request's own filters): a waiting line is retried only when > 0."""
    query = select(func.count(Node.id)).where(
        *predicates((Filter.RESOURCE_CLASS,)))
    with db.read() as session:
        return int(session.connection().scalar(
            query, {"f_resource_class": resource_class}) or 0)
