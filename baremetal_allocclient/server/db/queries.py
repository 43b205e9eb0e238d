"""Queries and the atomic reservation and release operations.

Everything that must be atomic across threads *and* processes is a single
transaction guarded by compare-and-set ``UPDATE ... WHERE`` clauses, so it
works the same on SQLite, PostgreSQL and MariaDB.
"""

from __future__ import annotations

import datetime
import enum
import functools
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Integer,
    Select,
    Update,
    bindparam,
    delete,
    func,
    insert,
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
from baremetal_allocclient.server.logic.release import NodeView
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


@functools.cache
def _by_ident(
    model: type[Node] | type[Allocation], by_uuid: bool, lock: bool
) -> Select[Any]:
    column = model.uuid if by_uuid else model.name
    query = select(model).where(column == bindparam("ident"))
    return query.with_for_update() if lock else query


def node_by_ident(
    session: Session, ident: str, by_uuid: bool, lock: bool = True
) -> Node | None:
    """A node by UUID (``by_uuid``) or by name, locked in a write.

    Existence checks pass ``lock=False``: on InnoDB, locking a missing
    row takes gap locks that make concurrent inserts deadlock.
    """
    query = _by_ident(Node, by_uuid, lock and _locks(session))
    node: Node | None = session.scalars(query, {"ident": ident}).first()
    return node


def allocation_by_ident(
    session: Session, ident: str, by_uuid: bool, lock: bool = True
) -> Allocation | None:
    """An allocation by UUID (``by_uuid``) or by name, locked in a write
    unless ``lock`` is False (existence checks)."""
    query = _by_ident(Allocation, by_uuid, lock and _locks(session))
    found: Allocation | None = session.scalars(
        query, {"ident": ident}
    ).first()
    return found


@functools.cache
def _allocation_with_node_uuid(by_uuid: bool) -> Select[Any]:
    column = Allocation.uuid if by_uuid else Allocation.name
    return (
        select(*Allocation.__table__.columns, Node.uuid.label("node_uuid"))
        .outerjoin(Node, Node.id == Allocation.node_id)
        .where(column == bindparam("ident"))
    )


def allocation_for_reading(
    session: Session, ident: str, by_uuid: bool
) -> tuple[Allocation, str | None] | None:
    """An allocation by UUID or name with its node's UUID, in one query.

    For answering reads: the allocation is built from the row and not
    tracked by the session, because the ORM's loading costs more CPU
    than the query itself and GET is what polling clients repeat.
    """
    row = session.connection().execute(
        _allocation_with_node_uuid(by_uuid), {"ident": ident}
    ).first()
    if row is None:
        return None
    values = dict(row._mapping)
    node_uuid: str | None = values.pop("node_uuid")
    return Allocation(**values), node_uuid


def allocation_by_id(
    session: Session, allocation_id: int
) -> Allocation | None:
    """An allocation by database id, locked in a write."""
    return session.get(
        Allocation, allocation_id, with_for_update=_locks(session)
    )


_RELEASE_VIEW = select(
    Node.uuid, Node.provision_state, Node.target_provision_state,
    Node.maintenance,
).where(Node.id == bindparam("node_id"))
_RELEASE_VIEW_LOCKED = _RELEASE_VIEW.with_for_update()


def release_view(session: Session, node_id: int) -> NodeView | None:
    """What the release rules need of a node (locked in a write); the
    whole row is not loaded."""
    query = _RELEASE_VIEW_LOCKED if _locks(session) else _RELEASE_VIEW
    row = session.connection().execute(query, {"node_id": node_id}).first()
    if row is None:
        return None
    return NodeView(row[0], row[1], row[2], bool(row[3]))


_NODE_UUID = select(Node.uuid).where(Node.id == bindparam("node_id"))


def node_uuid(session: Session, node_id: int) -> str | None:
    """The UUID of the node with this database id."""
    return session.connection().scalar(_NODE_UUID, {"node_id": node_id})


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
# Statements are built once per combination of filters, with the request's
# values as bound parameters (``filter_params``): building and cache-keying
# an SQLAlchemy expression costs more CPU than running it on an index, and
# these run several times per allocation.

def filter_params(request: Request) -> dict[str, Any]:
    """Values for the bound parameters of :func:`predicates`."""
    wanted = sorted(set(request.traits))
    return {
        "f_resource_class": request.resource_class,
        "f_candidate_nodes": list(request.candidate_nodes),
        "f_owner": request.owner,
        "f_traits": wanted,
        "f_trait_count": len(wanted),
    }


def _predicate(flt: Filter) -> list[ColumnElement[bool]]:
    if flt is Filter.RESOURCE_CLASS:
        return [
            Node.provision_state == ns.AVAILABLE,
            Node.maintenance.is_(False),
            Node.power_state.is_not(None),
            Node.instance_uuid.is_(None),
            Node.allocation_id.is_(None),
            Node.resource_class == bindparam("f_resource_class"),
        ]
    if flt is Filter.CANDIDATES:
        return [Node.uuid.in_(bindparam("f_candidate_nodes", expanding=True))]
    if flt is Filter.OWNER:
        owner: BindParameter[str] = bindparam("f_owner")
        return [or_(Node.owner == owner, Node.lessee == owner)]
    having_all = (
        select(NodeTrait.node_id)
        .where(NodeTrait.trait.in_(bindparam("f_traits", expanding=True)))
        .group_by(NodeTrait.node_id)
        .having(func.count(NodeTrait.trait) == bindparam("f_trait_count"))
    )
    return [Node.id.in_(having_all)]


@functools.cache
def predicates(filters: tuple[Filter, ...]) -> tuple[ColumnElement[bool], ...]:
    """SQL conditions for the given filters (parameters:
    :func:`filter_params`)."""
    result: list[ColumnElement[bool]] = []
    for flt in filters:
        result.extend(_predicate(flt))
    return tuple(result)


def candidates(
    session: Session, request: Request, filters: Sequence[Filter]
) -> list[tuple[int, str | None]]:
    """(id, name) of every node passing all filters; nothing else loaded."""
    query = select(Node.id, Node.name).where(*predicates(tuple(filters)))
    rows = session.connection().execute(query, filter_params(request))
    return [(int(row[0]), row[1]) for row in rows]


#: How many candidates one search loads.  Loading every matching node
#: made each allocation cost O(fleet size); a window of the index, at a
#: random position, costs the same at 1k and 100k nodes and still spreads
#: concurrent workers over different nodes.
CANDIDATE_WINDOW = 32


@functools.cache
def candidate_query(
    filters: tuple[Filter, ...], before: bool = False
) -> Select[int, str | None, str]:
    """Up to ``w_limit`` matching nodes from id ``w_pivot`` on (or, with
    ``before``, from the start up to ``w_pivot``), in id order, so the
    database walks the selection index instead of sorting the fleet."""
    pivot: BindParameter[int] = bindparam("w_pivot")
    position = Node.id < pivot if before else Node.id >= pivot
    return (
        select(Node.id, Node.name, Node.uuid)
        .where(*_window_predicates(filters), position)
        .order_by(Node.id)
        .limit(bindparam("w_limit", type_=Integer))
    )


def _window_predicates(
    filters: tuple[Filter, ...]
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
            result.extend(_predicate(flt))
            continue
        result += [
            Node.resource_class == bindparam("f_resource_class"),
            Node.provision_state == ns.AVAILABLE,
            Node.maintenance.is_(False),
            Node.power_state.is_not(None),
            (Node.instance_uuid + "").is_(None),
            (Node.allocation_id + 0).is_(None),
        ]
    return result


@functools.cache
def _named_candidate_query(
    filters: tuple[Filter, ...]
) -> Select[int, str | None, str]:
    return select(Node.id, Node.name, Node.uuid).where(
        *predicates(filters), Node.name == bindparam("w_name")
    )


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
    key = tuple(filters)
    conn = session.connection()
    params = filter_params(request)
    rows = list(conn.execute(
        candidate_query(key),
        {**params, "w_pivot": pivot, "w_limit": limit},
    ))
    if len(rows) < limit:
        rows += conn.execute(
            candidate_query(key, before=True),
            {**params, "w_pivot": pivot, "w_limit": limit - len(rows)},
        )
    found = [Candidate(int(node_id), name, str(uuid))
             for node_id, name, uuid in rows]
    if request.name is not None and all(
        c.name != request.name for c in found
    ):
        named = conn.execute(
            _named_candidate_query(key), {**params, "w_name": request.name}
        ).first()
        if named is not None:
            found.append(Candidate(int(named[0]), named[1], str(named[2])))
    return found


def cumulative_counts(
    session: Session, request: Request, filters: Sequence[Filter]
) -> list[int]:
    """How many nodes survive each prefix of ``filters`` (for diagnosis)."""
    counts = []
    params = filter_params(request)
    for i in range(1, len(filters) + 1):
        query = select(func.count(Node.id)).where(
            *predicates(tuple(filters[:i]))
        )
        counts.append(int(session.connection().scalar(query, params) or 0))
    return counts


# -- creation ----------------------------------------------------------
_INSERT_ALLOCATION = insert(Allocation)


def insert_allocation(session: Session, allocation: Allocation) -> None:
    """Store a new (transient) allocation and set its id.

    One prebuilt INSERT instead of the ORM's unit of work, whose flush
    was the largest single item of a create in the profile.  Unset
    attributes take their column defaults, as in a flush.
    """
    values = {
        column.key: value
        for column in Allocation.__table__.columns
        if (value := getattr(allocation, column.key)) is not None
    }
    result = session.connection().execute(_INSERT_ALLOCATION, values)
    key = result.inserted_primary_key
    assert key is not None  # a single-row INSERT always has one
    allocation.id = int(key[0])


# -- reservation and release -------------------------------------------
_OWNED_ALLOCATION = (
    select(Allocation.id)
    .where(
        Allocation.id == bindparam("r_allocation"),
        Allocation.state == ALLOCATING,
        Allocation.conductor_affinity == bindparam("r_affinity"),
    )
    .with_for_update()
)
_NODE_INSTANCE_INFO = (
    select(Node.instance_info)
    .where(Node.id == bindparam("r_node"))
    .with_for_update()
)
_ALLOCATION_ACTIVE = (
    update(Allocation)
    .where(Allocation.id == bindparam("r_allocation"))
    .values(state=ACTIVE, node_id=bindparam("r_node"),
            updated_at=bindparam("r_now"), last_error=None)
)


@functools.cache
def _take_node(filters: tuple[Filter, ...]) -> Update:
    """The compare-and-set that gives a node to an allocation."""
    return (
        update(Node)
        .where(Node.id == bindparam("r_node"), *predicates(filters))
        .values(
            allocation_id=bindparam("r_allocation"),
            instance_uuid=bindparam("r_uuid"),
            instance_info=bindparam("r_info", type_=Node.instance_info.type),
            updated_at=bindparam("r_now"),
        )
    )


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
    params: dict[str, Any] = {
        **filter_params(request),
        "r_allocation": allocation_id,
        "r_affinity": affinity,
        "r_node": node_id,
        "r_uuid": allocation_uuid,
        "r_now": now or utcnow(),
    }
    try:
        with db.write() as session:
            conn = session.connection()
            if conn.scalar(_OWNED_ALLOCATION, params) is None:
                return Reservation.ALLOCATION_GONE
            # Read under the row lock, so no concurrent node update is
            # lost when the traits are merged in below.
            info = conn.scalar(_NODE_INSTANCE_INFO, params)
            params["r_info"] = {**(info or {}),
                                "traits": list(request.traits)}
            taken = conn.execute(_take_node(tuple(filters)), params)
            if rowcount(taken) != 1:
                raise _Rollback()
            conn.execute(_ALLOCATION_ACTIVE, params)
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


_ALLOCATED_NODE = (Node.id == bindparam("r_node"),
                   Node.allocation_id == bindparam("r_allocation"))
_ALLOCATED_NODE_INFO = select(Node.instance_info).where(*_ALLOCATED_NODE)
_FREE_NODE = (
    update(Node)
    .where(*_ALLOCATED_NODE)
    .values(allocation_id=None, instance_uuid=None,
            updated_at=bindparam("r_now"))
)
_FREE_NODE_AND_INFO = _FREE_NODE.values(
    instance_info=bindparam("r_info", type_=Node.instance_info.type)
)
_DELETE_ALLOCATION = delete(Allocation).where(
    Allocation.id == bindparam("r_allocation")
)


def release_in_session(session: Session, allocation: Allocation) -> None:
    """Delete an allocation and free its node, inside the caller's
    transaction (so callers can combine it with their own node change).

    The node keeps its ``instance_info`` but for the traits the
    allocation put there; a NULL one stays NULL.
    """
    session.flush()  # the caller's pending ORM changes go first
    conn = session.connection()
    params: dict[str, Any] = {"r_allocation": allocation.id,
                              "r_node": allocation.node_id,
                              "r_now": utcnow()}
    if allocation.node_id is not None:
        info = conn.scalar(_ALLOCATED_NODE_INFO, params)
        if info is None:
            conn.execute(_FREE_NODE, params)
        else:
            params["r_info"] = {k: v for k, v in info.items()
                                if k != "traits"}
            conn.execute(_FREE_NODE_AND_INFO, params)
    conn.execute(_DELETE_ALLOCATION, params)
