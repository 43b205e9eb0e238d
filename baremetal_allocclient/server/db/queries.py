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
    and_,
    bindparam,
    case,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from baremetal_allocclient import constraints as constraints_module
from baremetal_allocclient import leases
from baremetal_allocclient.constraints import (
    Constraints,
    Funnel,
    Kind,
    Step,
    funnel_from_counts,
)
from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server.allocation import queue as queue_logic
from baremetal_allocclient.server.allocation.release_rules import NodeView
from baremetal_allocclient.server.allocation.selection import (
    AnyFilter,
    Candidate,
    ConstraintFilter,
    Filter,
    Request,
    active_filters,
    constraint_filters,
    funnel_steps,
)
from baremetal_allocclient.server.db import node_properties  # noqa: F401
from baremetal_allocclient.server.db.engine import (
    WRITE,
    Database,
    is_transient,
)
from baremetal_allocclient.server.db.models import (
    Allocation,
    Node,
    NodeProperty,
    NodeTrait,
    NodeVif,
    utcnow,
)

ALLOCATING = "allocating"
ACTIVE = "active"
ERROR = "error"


class Reservation(enum.Enum):
    """Outcome of one reservation attempt."""

    RESERVED = "reserved"
    NODE_TAKEN = "node taken"  # try the next candidate
    #: The allocation no longer exists: stop, and undo any claim made
    #: for it elsewhere (Placement).
    ALLOCATION_DELETED = "allocation deleted"
    #: The allocation exists but is not this worker's any more (taken
    #: over by another conductor, or settled): stop and touch nothing,
    #: since the new owner may hold a claim under the same UUID.
    NOT_OURS = "not ours"


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
    if not lock:
        return query
    # A locked read must see the row as it is now, not as an earlier
    # unlocked read of the same session left it.
    return query.with_for_update().execution_options(populate_existing=True)


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
        Allocation, allocation_id, with_for_update=_locks(session),
        populate_existing=True,
    )


def holder_of(session: Session, node: Node) -> Allocation | None:
    """The allocation holding ``node``, locked in a write.

    The caller has loaded (and in a write, locked) the node first: node,
    then allocation is the one lock order, and while the node is locked
    its ``allocation_id`` cannot change.
    """
    if node.allocation_id is None:
        return None
    return allocation_by_id(session, node.allocation_id)


def allocation_for_release(
    session: Session, ident: str, by_uuid: bool
) -> Allocation | None:
    """An allocation by UUID or name with its node locked first, then
    itself (the one lock order), ready for :func:`release_in_session`.

    The node comes from an unlocked read.  If the allocation got a node
    in between (it was ``allocating``), that node is locked after it: the
    only way round the order, and rare; a deadlock it causes is reported
    by the database and the request runs again.
    """
    seen = allocation_by_ident(session, ident, by_uuid, lock=False)
    if seen is None:
        return None
    node_id = seen.node_id
    if node_id is not None:
        release_view(session, node_id)  # locks the node
    locked = allocation_by_id(session, seen.id)
    if locked is not None and locked.node_id not in (None, node_id):
        release_view(session, locked.node_id)
    return locked


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
        **_constraint_params(request),
    }


def _constraint_params(request: Request) -> dict[str, Any]:
    """Bound values of the constraints extension's filters."""
    con = request.constraints
    if not con:
        return {}
    params: dict[str, Any] = {
        "c_forbidden": list(con.forbidden_traits),
        "c_node_owner": con.node_owner,
        "c_node_lessee": con.node_lessee,
        "c_group": con.conductor_group,
        "c_shard": con.shard,
        "c_node_name": con.node_name,
    }
    for i, prop in enumerate(con.properties):
        params[f"c_p{i}_key"] = prop.key
        params[f"c_p{i}_text"] = prop.value
        params[f"c_p{i}_number"] = prop.number
    return params


def _property_predicate(flt: ConstraintFilter) -> ColumnElement[bool]:
    """EXISTS a normalized property row of the node satisfying it (the
    primary key (node_id, key) makes it one index lookup per node)."""
    i = flt.position
    row = NodeProperty
    number: BindParameter[float] = bindparam(f"c_p{i}_number")
    if flt.variant == "min":
        test: ColumnElement[bool] = row.number >= number
    elif flt.variant == "eq_number":
        test = or_(row.number == number,
                   and_(row.number.is_(None),
                        row.text == bindparam(f"c_p{i}_text")))
    else:
        test = row.text == bindparam(f"c_p{i}_text")
    return exists().where(row.node_id == Node.id,
                          row.key == bindparam(f"c_p{i}_key"), test)


def _constraint_predicate(flt: ConstraintFilter) -> ColumnElement[bool]:
    kind = flt.kind
    if kind is Kind.PROPERTY:
        return _property_predicate(flt)
    if kind is Kind.FORBIDDEN_TRAITS:
        return ~exists().where(
            NodeTrait.node_id == Node.id,
            NodeTrait.trait.in_(bindparam("c_forbidden", expanding=True)))
    column, param = {
        Kind.NODE_OWNER: (Node.owner, "c_node_owner"),
        Kind.NODE_LESSEE: (Node.lessee, "c_node_lessee"),
        Kind.CONDUCTOR_GROUP: (Node.conductor_group, "c_group"),
        Kind.SHARD: (Node.shard, "c_shard"),
        Kind.NODE_NAME: (Node.name, "c_node_name"),
    }[kind]
    return column == bindparam(param)


def _predicate(flt: AnyFilter) -> list[ColumnElement[bool]]:
    if isinstance(flt, ConstraintFilter):
        return [_constraint_predicate(flt)]
    if flt is Filter.RESOURCE_CLASS:
        return [
            Node.provision_state == ns.AVAILABLE,
            Node.maintenance.is_(False),
            Node.power_state.is_not(None),
            Node.instance_uuid.is_(None),
            Node.allocation_id.is_(None),
            Node.parent_node.is_(None),  # child nodes are never allocated
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
def predicates(
    filters: tuple[AnyFilter, ...]
) -> tuple[ColumnElement[bool], ...]:
    """SQL conditions for the given filters (parameters:
    :func:`filter_params`)."""
    result: list[ColumnElement[bool]] = []
    for flt in filters:
        result.extend(_predicate(flt))
    return tuple(result)


def candidates(
    session: Session, request: Request, filters: Sequence[AnyFilter]
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
    filters: tuple[AnyFilter, ...], before: bool = False
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
    filters: tuple[AnyFilter, ...]
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
            Node.parent_node.is_(None),
        ]
    return result


@functools.cache
def _named_candidate_query(
    filters: tuple[AnyFilter, ...]
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
    filters: Sequence[AnyFilter],
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
    preferred = request.preferred_name
    if preferred is not None and all(c.name != preferred for c in found):
        named = conn.execute(
            _named_candidate_query(key), {**params, "w_name": preferred}
        ).first()
        if named is not None:
            found.append(Candidate(int(named[0]), named[1], str(named[2])))
    return found


def visible_to(owner: str | None) -> ColumnElement[bool] | None:
    """The nodes an allocation's owner may see (owned or leased), or
    None (every node) without an owner."""
    if owner is None:
        return None
    return or_(Node.owner == owner, Node.lessee == owner)


def constraint_condition(
    wanted: Constraints,
) -> ColumnElement[bool] | None:
    """The constraints as one SQL condition with their values bound
    (for queries that take a ready-made WHERE clause, such as capacity);
    None without constraints."""
    request = Request(resource_class="", constraints=wanted)
    conditions = [c for f in constraint_filters(request)
                  for c in _predicate(f)]
    if not conditions:
        return None
    return and_(*conditions).params(_constraint_params(request))


_BASIC_STEPS: dict[Kind, tuple[ColumnElement[bool], ...]] = {
    Kind.RESOURCE_CLASS: (
        Node.resource_class == bindparam("f_resource_class"),),
    Kind.AVAILABLE: (Node.provision_state == ns.AVAILABLE,
                     Node.parent_node.is_(None)),
    Kind.NOT_IN_MAINTENANCE: (Node.maintenance.is_(False),),
    Kind.POWER_STATE: (Node.power_state.is_not(None),),
    Kind.UNRESERVED: (Node.instance_uuid.is_(None),
                      Node.allocation_id.is_(None)),
}
_IRONIC_STEPS = {Kind.OWNER: Filter.OWNER, Kind.CANDIDATES:
                 Filter.CANDIDATES, Kind.TRAITS: Filter.TRAITS}


def _step_conditions(step: Step, request: Request
                     ) -> list[ColumnElement[bool]]:
    """SQL conditions of one funnel step (the same ones the allocation
    path uses, split so that each step is counted)."""
    if step.kind in _BASIC_STEPS:
        return list(_BASIC_STEPS[step.kind])
    if step.kind in _IRONIC_STEPS:
        return _predicate(_IRONIC_STEPS[step.kind])
    variants = {(f.kind, f.position): f
                for f in constraint_filters(request)}
    return _predicate(variants[(step.kind, step.index)])


def funnel_counts(
    session: Session,
    request: Request,
    visible: ColumnElement[bool] | None = None,
) -> Funnel:
    """The funnel of ``request``: nodes left after each step, counted in
    one query over the nodes of the resource class (``visible``
    restricts the nodes counted)."""
    sums = []
    conditions: list[ColumnElement[bool]] = []
    for step in funnel_steps(request):
        conditions += _step_conditions(step, request)
        sums.append(func.coalesce(func.sum(
            case((and_(*conditions), 1), else_=0)), 0))
    query = select(*sums).where(
        Node.resource_class == bindparam("f_resource_class"))
    if visible is not None:
        query = query.where(visible)
    row = session.connection().execute(query, filter_params(request)).one()
    return funnel_from_counts(request.selection, [int(v) for v in row])


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
# The one lock order: the node first, then the allocation.  Every path
# that touches both (reservation, backfill, every release) follows it, so
# two of them wait for each other instead of deadlocking.  The one
# exception (an allocation that got its node during a DELETE, see
# allocation_for_release) can deadlock; the database breaks it and the
# request runs again.
_NODE_INSTANCE_INFO = (
    select(Node.instance_info)
    .where(Node.id == bindparam("r_node"))
    .with_for_update()
)
#: A worker does not queue behind another transaction's lock on a
#: candidate (a stalled process, a node being changed): the node counts as
#: taken and the next candidate is tried, as Ironic does with a locked node.
_LOCK_CANDIDATE = (
    select(Node.id)
    .where(Node.id == bindparam("r_node"))
    .with_for_update(skip_locked=True)
)
#: The last search round waits for the lock instead (bounded by the
#: session's lock timeout), so that a node another transaction only
#: looked at, and then left, is not counted as taken.
_LOCK_CANDIDATE_WAITING = (
    select(Node.id)
    .where(Node.id == bindparam("r_node"))
    .with_for_update()
)
#: The allocation (this id *and* UUID) is still this worker's to settle.
_OWNED = (
    Allocation.id == bindparam("r_allocation"),
    Allocation.uuid == bindparam("r_uuid"),
    Allocation.state == ALLOCATING,
    Allocation.conductor_affinity == bindparam("r_affinity"),
)
_OWNED_ALLOCATION = (
    select(Allocation.id, Allocation.queue_deadline, Allocation.extra)
    .where(*_OWNED).with_for_update()
)
_ALLOCATION_EXISTS = select(Allocation.id).where(
    Allocation.id == bindparam("r_allocation"),
    Allocation.uuid == bindparam("r_uuid"),
)
_ALLOCATION_ACTIVE = (
    update(Allocation)
    .where(Allocation.id == bindparam("r_allocation"),
           Allocation.uuid == bindparam("r_uuid"))
    .values(state=ACTIVE, node_id=bindparam("r_node"),
            updated_at=bindparam("r_now"), last_error=None,
            funnel_error=None)
)
#: An allocation that waited in line: its lease starts now.
_ALLOCATION_ACTIVE_RELEASED_FROM_LINE = _ALLOCATION_ACTIVE.values(
    extra=bindparam("r_extra", type_=Allocation.extra.type))
#: A node may be given to allocation ``r_uuid`` only while no allocation
#: holds it and no other instance is on it.
_NODE_IS_FREE_FOR = (
    Node.allocation_id.is_(None),
    or_(Node.instance_uuid.is_(None),
        Node.instance_uuid == bindparam("r_uuid")),
)


@functools.cache
def _take_node(filters: tuple[AnyFilter, ...], *extra: ColumnElement[bool]
               ) -> Update:
    """The compare-and-set that gives a node to an allocation: the node
    must still be free and pass ``filters`` and ``extra``."""
    return (
        update(Node)
        .where(Node.id == bindparam("r_node"), *_NODE_IS_FREE_FOR,
               *predicates(filters), *extra)
        .values(
            allocation_id=bindparam("r_allocation"),
            instance_uuid=bindparam("r_uuid"),
            instance_info=bindparam("r_info", type_=Node.instance_info.type),
            updated_at=bindparam("r_now"),
        )
    )


def _give_node(conn: Any, statement: Update, params: dict[str, Any],
               traits: Sequence[str]) -> bool:
    """Run a :func:`_take_node` compare-and-set on a node locked by the
    caller, recording ``traits`` in its ``instance_info``."""
    # Read under the row lock, so no concurrent node update is lost when
    # the traits are merged in.
    info = conn.scalar(_NODE_INSTANCE_INFO, params)
    params["r_info"] = {**(info or {}), "traits": list(traits)}
    return rowcount(conn.execute(statement, params)) == 1


def reserve(
    db: Database,
    allocation_id: int,
    allocation_uuid: str,
    node_id: int,
    request: Request,
    filters: Sequence[AnyFilter],
    affinity: str,
    now: datetime.datetime | None = None,
    *,
    wait_for_lock: bool = False,
) -> Reservation:
    """Atomically give ``node_id`` to the allocation, if both still allow.

    The allocation row (its id *and* UUID) must still be ``allocating``
    and owned by this conductor; the node must still pass every filter
    and be free.  Both rows change in one transaction or neither does.
    Locks the node, then the allocation (the one lock order).  A deadlock
    or serialization failure reported by the database anyway counts as
    losing the node.  ``now`` is the ``updated_at`` to write (callers
    that report it pass their own).  A node locked by another transaction
    counts as taken at once, unless ``wait_for_lock``.

    First come, first served: the node is not given while an earlier
    allocation waiting in line (:func:`waiting_before`) matches it; that
    one takes it on its next attempt.
    """
    lock = _LOCK_CANDIDATE_WAITING if wait_for_lock else _LOCK_CANDIDATE
    params: dict[str, Any] = {
        **filter_params(request),
        "r_allocation": allocation_id,
        "r_affinity": affinity,
        "r_node": node_id,
        "r_uuid": allocation_uuid,
        "r_now": now or utcnow(),
    }
    gone = Reservation.NODE_TAKEN
    try:
        with db.write() as session:
            conn = session.connection()
            if conn.scalar(lock, params) is None:
                raise _Rollback()  # locked by another transaction, or gone
            owned = conn.execute(_OWNED_ALLOCATION, params).first()
            if owned is None:
                exists = conn.scalar(_ALLOCATION_EXISTS, params) is not None
                gone = (Reservation.NOT_OURS if exists
                        else Reservation.ALLOCATION_DELETED)
                raise _Rollback()
            if waiting_before(conn, allocation_id, node_id,
                              request.resource_class, params["r_now"]):
                raise _Rollback()  # promised to an earlier one in line
            if not _give_node(conn, _take_node(tuple(filters)), params,
                              request.traits):
                raise _Rollback()
            conn.execute(*_activation(owned, params))
    except _Rollback:
        return gone
    except DBAPIError as exc:
        if not is_transient(exc):
            raise
        return Reservation.NODE_TAKEN
    return Reservation.RESERVED


def _activation(owned: Any, params: dict[str, Any]
                ) -> tuple[Update, dict[str, Any]]:
    """The UPDATE making a reserved allocation ``active``: one that
    waited in line (a queue deadline) gets its lease restarted
    (:func:`leases.restarted`), so waiting does not eat the lease."""
    _id, deadline, extra = owned
    fresh = leases.restarted(extra, params["r_now"]) \
        if deadline is not None else None
    if fresh is None:
        return _ALLOCATION_ACTIVE, params
    return _ALLOCATION_ACTIVE_RELEASED_FROM_LINE, {**params,
                                                   "r_extra": fresh}


def give_node(session: Session, allocation: Allocation, node_id: int,
              request: Request, filters: Sequence[AnyFilter],
              now: datetime.datetime) -> bool:
    """Give a node to an allocation inserted in the caller's transaction
    (a group member), with the reservation's compare-and-set: False, and
    nothing written to the node, unless it is still free and passes
    every filter.  The caller has locked the node (the one lock order)."""
    params: dict[str, Any] = {
        **filter_params(request), "r_node": node_id,
        "r_allocation": allocation.id, "r_uuid": allocation.uuid,
        "r_now": now,
    }
    return _give_node(session.connection(), _take_node(tuple(filters)),
                      params, request.traits)


@functools.cache
def _locked_window(filters: tuple[AnyFilter, ...], before: bool
                   ) -> Select[int, str | None, str]:
    return candidate_query(filters, before).with_for_update(
        skip_locked=True)


def lock_free_nodes(session: Session, request: Request,
                    filters: Sequence[AnyFilter], pivot: int, count: int
                    ) -> list[Candidate]:
    """Lock up to ``count`` nodes passing all filters, from id ``pivot``
    on and wrapping around, in a write transaction.  Nodes another
    transaction holds locked are skipped (they are being taken or
    changed), so two group reservations never wait for each other."""
    if count <= 0:
        return []
    key = tuple(filters)
    conn = session.connection()
    params = filter_params(request)
    rows = list(conn.execute(_locked_window(key, False),
                             {**params, "w_pivot": pivot, "w_limit": count}))
    if len(rows) < count:
        rows += conn.execute(
            _locked_window(key, True),
            {**params, "w_pivot": pivot, "w_limit": count - len(rows)})
    return [Candidate(int(node_id), name, str(uuid))
            for node_id, name, uuid in rows]


# -- waiting in line (the queue extension) -------------------------------
def request_of(allocation: Allocation) -> Request:
    """The selection request an allocation row asks for."""
    return Request(
        resource_class=allocation.resource_class or "",
        traits=tuple(allocation.traits or ()),
        candidate_nodes=tuple(allocation.candidate_nodes or ()),
        owner=allocation.owner,
        name=allocation.name,
        constraints=constraints_module.from_wire(
            allocation.constraints or {}),
    )


#: Allocations waiting in line in a resource class, still within their
#: deadline.
_IN_LINE = (
    Allocation.state == ALLOCATING,
    Allocation.resource_class == bindparam("q_rc"),
    Allocation.queue_deadline.is_not(None),
    Allocation.queue_deadline > bindparam("q_now"),
)
_EARLIER_IN_LINE = (
    select(*Allocation.__table__.columns)
    .where(*_IN_LINE, Allocation.id < bindparam("q_before"))
    .order_by(Allocation.id)
)
_POSITION = select(func.count(Allocation.id)).where(
    *_IN_LINE, Allocation.id <= bindparam("q_before"))
_POSITION_AMONG = _POSITION.where(Allocation.owner == bindparam("q_owner"))


def _node_matches(conn: Any, node_id: int, request: Request) -> bool:
    """Whether the node passes every filter of ``request`` (the same SQL
    as the candidate query, for this one node)."""
    filters = tuple(active_filters(request))
    query = select(Node.id).where(Node.id == bindparam("q_node"),
                                  *predicates(filters))
    return conn.scalar(
        query, {**filter_params(request), "q_node": node_id}
    ) is not None


_ALL_IN_LINE = (
    select(*Allocation.__table__.columns)
    .where(*_IN_LINE)
    .order_by(Allocation.id)
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
                   waiting: Sequence[Request]) -> set[int]:
    """Which of ``node_ids`` (free, locked by the caller) the
    allocations ``waiting`` in line get first: each, in arrival order,
    is promised the first node it matches that no earlier one was
    (:func:`baremetal_allocclient.server.allocation.queue.promise`)."""
    if not node_ids or not waiting:
        return set()
    conn = session.connection()
    matches = [_matching_nodes(conn, node_ids, request)
               for request in waiting]
    return queue_logic.promise(node_ids, matches)


def waiting_before(conn: Any, allocation_id: int, node_id: int,
                   resource_class: str, now: datetime.datetime) -> bool:
    """True when an allocation that arrived before ``allocation_id``
    waits in line in the same resource class and matches the node.

    Called by :func:`reserve` with the node locked, so no release or
    other reservation of it interleaves; the allocations in line are
    read, not locked (the one lock order is kept).  Reading one that
    settles meanwhile only makes the caller skip the node this time.
    """
    rows = conn.execute(_EARLIER_IN_LINE, {
        "q_rc": resource_class, "q_now": now, "q_before": allocation_id,
    }).all()
    for row in rows:
        earlier = Allocation(**dict(row._mapping))
        if _node_matches(conn, node_id, request_of(earlier)):
            return True
    return False


def queue_position(session: Session, allocation: Allocation,
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


_BACKFILLED_NODE = (Node.provision_state == ns.ACTIVE,)


def backfill(session: Session, allocation: Allocation, node_id: int,
             now: datetime.datetime) -> bool:
    """Give a deployed node to a new ``active`` allocation, inside the
    caller's transaction, with the same compare-and-set as a worker's
    reservation: False (and nothing written to the node) when the node is
    held by an allocation or another instance, or is no longer active.
    The caller has locked the node (the one lock order) and inserted the
    allocation."""
    params: dict[str, Any] = {"r_node": node_id,
                              "r_allocation": allocation.id,
                              "r_uuid": allocation.uuid, "r_now": now}
    return _give_node(session.connection(), _take_node((), *_BACKFILLED_NODE),
                      params, allocation.traits or [])


def still_owned(
    db: Database, allocation_id: int, allocation_uuid: str, affinity: str
) -> bool:
    """True while the allocation is ``allocating`` under ``affinity``:
    checked before undoing anything done elsewhere in its name."""
    with db.read() as session:
        params = {"r_allocation": allocation_id, "r_uuid": allocation_uuid,
                  "r_affinity": affinity}
        return session.connection().scalar(
            select(Allocation.id).where(*_OWNED), params
        ) is not None


def fail_allocation(
    db: Database,
    allocation_id: int,
    allocation_uuid: str,
    affinity: str,
    message: str,
    now: datetime.datetime | None = None,
    detail: str | None = None,
) -> bool:
    """Move an allocating allocation this conductor owns (this id *and*
    UUID) to ``error``: ``message`` in ``last_error``, ``detail`` (the
    text with the funnel) in ``funnel_error``."""
    with db.write() as session:
        result = session.execute(
            update(Allocation)
            .where(
                Allocation.id == allocation_id,
                Allocation.uuid == allocation_uuid,
                Allocation.state == ALLOCATING,
                Allocation.conductor_affinity == affinity,
            )
            .values(state=ERROR, last_error=message, funnel_error=detail,
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


def detach_vifs(session: Session, node_id: int) -> None:
    """Detach every VIF of a node (tear down), like Ironic's
    ``remove_vifs_from_node``."""
    session.execute(delete(NodeVif).where(NodeVif.node_id == node_id))
