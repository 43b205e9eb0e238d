"""Queries and the atomic reservation and release operations.

Everything that must be atomic across threads *and* processes is a single
transaction guarded by compare-and-set ``UPDATE ... WHERE`` clauses, so it
works the same on SQLite, PostgreSQL and MariaDB.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Select,
    and_,
    delete,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from baremetal_allocclient.server.db.engine import (
    WRITE,
    Database,
    is_transient,
)
from baremetal_allocclient.server.db.models import (
    Allocation,
    Node,
    NodeTrait,
    utcnow,
)
from baremetal_allocclient.server.logic import node_states as ns
from baremetal_allocclient.server.logic.selection import (
    Candidate,
    Filter,
    Request,
)

ALLOCATING = "allocating"
ACTIVE = "active"
ERROR = "error"


class Reservation(enum.Enum):
    """Outcome of one reservation attempt."""

    RESERVED = "reserved"
    NODE_TAKEN = "node taken"  # try the next candidate
    ALLOCATION_GONE = "allocation gone"  # deleted or taken over: stop


def rowcount(result: object) -> int:
    """Rows matched by an UPDATE/DELETE (typed access across SA versions)."""
    count = cast(Any, result).rowcount
    return int(count)


class _Rollback(Exception):
    """Internal: abort the surrounding write transaction."""


# -- lookups -----------------------------------------------------------
def _locks(session: Session) -> bool:
    return bool(session.info.get(WRITE))


def node_by_ident(
    session: Session, ident: str, by_uuid: bool, lock: bool = True
) -> Node | None:
    """A node by UUID (``by_uuid``) or by name, locked in a write.

    Existence checks pass ``lock=False``: on InnoDB, locking a missing
    row takes gap locks that make concurrent inserts deadlock.
    """
    column = Node.uuid if by_uuid else Node.name
    query = select(Node).where(column == ident)
    if lock and _locks(session):
        query = query.with_for_update()
    return session.scalars(query).first()


def allocation_by_ident(
    session: Session, ident: str, by_uuid: bool, lock: bool = True
) -> Allocation | None:
    """An allocation by UUID (``by_uuid``) or by name, locked in a write
    unless ``lock`` is False (existence checks)."""
    column = Allocation.uuid if by_uuid else Allocation.name
    query = select(Allocation).where(column == ident)
    if lock and _locks(session):
        query = query.with_for_update()
    return session.scalars(query).first()


def node_by_id(session: Session, node_id: int) -> Node | None:
    """A node by database id, locked in a write."""
    return session.get(Node, node_id, with_for_update=_locks(session))


def allocation_by_id(
    session: Session, allocation_id: int
) -> Allocation | None:
    """An allocation by database id, locked in a write."""
    return session.get(
        Allocation, allocation_id, with_for_update=_locks(session)
    )


def traits_of(
    session: Session, node_ids: Sequence[int]
) -> dict[int, list[str]]:
    """Sorted traits for each of the given nodes (one query)."""
    result: dict[int, list[str]] = {nid: [] for nid in node_ids}
    if not node_ids:
        return result
    rows = session.execute(
        select(NodeTrait.node_id, NodeTrait.trait)
        .where(NodeTrait.node_id.in_(node_ids))
        .order_by(NodeTrait.trait)
    )
    for node_id, trait in rows:
        result[node_id].append(trait)
    return result


def node_uuids(session: Session, node_ids: Sequence[int]) -> dict[int, str]:
    """Map node ids to UUIDs (one query)."""
    if not node_ids:
        return {}
    rows = session.execute(
        select(Node.id, Node.uuid).where(Node.id.in_(node_ids))
    )
    return {int(nid): str(uuid) for nid, uuid in rows}


def replace_traits(
    session: Session, node_id: int, traits: Sequence[str]
) -> None:
    """Set a node's traits to exactly ``traits``."""
    session.execute(delete(NodeTrait).where(NodeTrait.node_id == node_id))
    for trait in sorted(set(traits)):
        session.add(NodeTrait(node_id=node_id, trait=trait))


def touch_node(session: Session, node_id: int) -> None:
    """Bump updated_at after a change that did not go through the ORM."""
    session.execute(
        update(Node).where(Node.id == node_id).values(updated_at=utcnow())
    )


# -- selection ---------------------------------------------------------
def _predicate(flt: Filter, request: Request) -> list[ColumnElement[bool]]:
    if flt is Filter.RESOURCE_CLASS:
        return [
            Node.provision_state == ns.AVAILABLE,
            Node.maintenance.is_(False),
            Node.power_state.is_not(None),
            Node.instance_uuid.is_(None),
            Node.allocation_id.is_(None),
            Node.resource_class == request.resource_class,
        ]
    if flt is Filter.CANDIDATES:
        return [Node.uuid.in_(request.candidate_nodes)]
    if flt is Filter.OWNER:
        return [or_(Node.owner == request.owner, Node.lessee == request.owner)]
    wanted = sorted(set(request.traits))
    having_all = (
        select(NodeTrait.node_id)
        .where(NodeTrait.trait.in_(wanted))
        .group_by(NodeTrait.node_id)
        .having(func.count(NodeTrait.trait) == len(wanted))
    )
    return [Node.id.in_(having_all)]


def predicates(
    request: Request, filters: Sequence[Filter]
) -> list[ColumnElement[bool]]:
    """SQL conditions for the given filters."""
    result: list[ColumnElement[bool]] = []
    for flt in filters:
        result.extend(_predicate(flt, request))
    return result


def candidates(
    session: Session, request: Request, filters: Sequence[Filter]
) -> list[tuple[int, str | None]]:
    """(id, name) of every node passing all filters; nothing else loaded."""
    query = select(Node.id, Node.name).where(
        and_(*predicates(request, filters))
    )
    return [(int(row[0]), row[1]) for row in session.execute(query)]


#: How many candidates one search loads.  Loading every matching node
#: made each allocation cost O(fleet size); a window of the index, at a
#: random position, costs the same at 1k and 100k nodes and still spreads
#: concurrent workers over different nodes.
CANDIDATE_WINDOW = 32


def candidate_query(
    request: Request,
    filters: Sequence[Filter],
    pivot: int,
    limit: int = CANDIDATE_WINDOW,
    before: bool = False,
) -> Select[int, str | None, str]:
    """Up to ``limit`` matching nodes from id ``pivot`` on (or, with
    ``before``, from the start up to ``pivot``), in id order, so the
    database walks the selection index instead of sorting the fleet."""
    position = Node.id < pivot if before else Node.id >= pivot
    return (
        select(Node.id, Node.name, Node.uuid)
        .where(and_(*_window_predicates(request, filters)), position)
        .order_by(Node.id)
        .limit(limit)
    )


def _window_predicates(
    request: Request, filters: Sequence[Filter]
) -> list[ColumnElement[bool]]:
    """``predicates`` with the "is free" tests written so that no index
    can serve them (``x + 0 IS NULL`` means ``x IS NULL``).

    Without statistics SQLite takes ``allocation_id IS NULL`` on a unique
    index for a one-row lookup and walks every free node in the fleet;
    this way the selection index (resource class, state, maintenance,
    then id) yields the window directly.
    """
    result: list[ColumnElement[bool]] = []
    for flt in filters:
        if flt is not Filter.RESOURCE_CLASS:
            result.extend(_predicate(flt, request))
            continue
        result += [
            Node.resource_class == request.resource_class,
            Node.provision_state == ns.AVAILABLE,
            Node.maintenance.is_(False),
            Node.power_state.is_not(None),
            (Node.instance_uuid + "").is_(None),
            (Node.allocation_id + 0).is_(None),
        ]
    return result


def highest_node_id(session: Session) -> int:
    """The largest node id (0 without nodes); an index lookup."""
    return int(session.scalar(select(func.max(Node.id))) or 0)


def candidate_window(
    session: Session,
    request: Request,
    filters: Sequence[Filter],
    pivot: int,
    limit: int = CANDIDATE_WINDOW,
) -> list[Candidate]:
    """Up to ``limit`` nodes passing all filters, starting at id ``pivot``
    and wrapping around; a node named like the allocation is always
    included when it matches.  Empty only when no node matches."""
    rows = list(session.execute(candidate_query(request, filters, pivot,
                                                limit)))
    if len(rows) < limit:
        rows += session.execute(candidate_query(
            request, filters, pivot, limit - len(rows), before=True))
    found = [Candidate(int(node_id), name, str(uuid))
             for node_id, name, uuid in rows]
    if request.name is not None and all(
        c.name != request.name for c in found
    ):
        named = session.execute(
            select(Node.id, Node.name, Node.uuid).where(
                and_(*predicates(request, filters)),
                Node.name == request.name,
            )
        ).first()
        if named is not None:
            found.append(Candidate(int(named[0]), named[1], str(named[2])))
    return found


def cumulative_counts(
    session: Session, request: Request, filters: Sequence[Filter]
) -> list[int]:
    """How many nodes survive each prefix of ``filters`` (for diagnosis)."""
    counts = []
    for i in range(1, len(filters) + 1):
        query = select(func.count(Node.id)).where(
            and_(*predicates(request, filters[:i]))
        )
        counts.append(int(session.scalar(query) or 0))
    return counts


# -- reservation and release -------------------------------------------
def reserve(
    db: Database,
    allocation_id: int,
    allocation_uuid: str,
    node_id: int,
    request: Request,
    filters: Sequence[Filter],
    affinity: str,
    now: datetime.datetime | None = None,
) -> Reservation:
    """Atomically give ``node_id`` to the allocation, if both still allow.

    The allocation row must still be ``allocating`` and owned by this
    conductor; the node must still pass every filter and be free.  Both
    rows change in one transaction or neither does.

    Lock order is allocation, then node (as in every other transaction
    touching both).  The allocation's node_id is written last: on
    PostgreSQL that foreign key takes a share lock on the node row, and
    taking it before the node update would let two workers racing for
    the same node deadlock.  A deadlock or serialization failure reported
    by the database anyway counts as losing the node.  ``now`` is the
    ``updated_at`` to write (callers that report it pass their own).
    """
    now = now or utcnow()
    try:
        with db.write() as session:
            owned = session.scalar(
                select(Allocation.id)
                .where(
                    Allocation.id == allocation_id,
                    Allocation.state == ALLOCATING,
                    Allocation.conductor_affinity == affinity,
                )
                .with_for_update()
            )
            if owned is None:
                return Reservation.ALLOCATION_GONE
            # Read under the row lock, so no concurrent node update is
            # lost when the traits are merged in below.
            info = session.scalar(
                select(Node.instance_info)
                .where(Node.id == node_id)
                .with_for_update()
            )
            new_info: dict[str, Any] = dict(info or {})
            new_info["traits"] = list(request.traits)
            taken = session.execute(
                update(Node)
                .where(Node.id == node_id, *predicates(request, filters))
                .values(
                    allocation_id=allocation_id,
                    instance_uuid=allocation_uuid,
                    instance_info=new_info,
                    updated_at=now,
                )
                .execution_options(synchronize_session=False)
            )
            if rowcount(taken) != 1:
                raise _Rollback()
            session.execute(
                update(Allocation)
                .where(Allocation.id == allocation_id)
                .values(
                    state=ACTIVE, node_id=node_id, updated_at=now,
                    last_error=None,
                )
                .execution_options(synchronize_session=False)
            )
    except _Rollback:
        return Reservation.NODE_TAKEN
    except DBAPIError as exc:
        if not is_transient(exc):
            raise
        return Reservation.NODE_TAKEN
    return Reservation.RESERVED


def fail_allocation(
    db: Database,
    allocation_id: int,
    affinity: str,
    message: str,
    now: datetime.datetime | None = None,
) -> bool:
    """Move an allocating allocation this conductor owns to ``error``."""
    with db.write() as session:
        result = session.execute(
            update(Allocation)
            .where(
                Allocation.id == allocation_id,
                Allocation.state == ALLOCATING,
                Allocation.conductor_affinity == affinity,
            )
            .values(state=ERROR, last_error=message,
                    updated_at=now or utcnow())
        )
        return rowcount(result) == 1


def release_in_session(session: Session, allocation: Allocation) -> None:
    """Delete an allocation and free its node, inside the caller's
    transaction (so callers can combine it with their own node change)."""
    now = utcnow()
    if allocation.node_id is not None:
        info = session.scalar(
            select(Node.instance_info).where(
                Node.id == allocation.node_id,
                Node.allocation_id == allocation.id,
            )
        )
        values: dict[str, Any] = {
            "allocation_id": None,
            "instance_uuid": None,
            "updated_at": now,
        }
        if info is not None:
            values["instance_info"] = {
                k: v for k, v in info.items() if k != "traits"
            }
        session.execute(
            update(Node)
            .where(
                Node.id == allocation.node_id,
                Node.allocation_id == allocation.id,
            )
            .values(**values)
            .execution_options(synchronize_session=False)
        )
    session.execute(
        delete(Allocation)
        .where(Allocation.id == allocation.id)
        .execution_options(synchronize_session=False)
    )
