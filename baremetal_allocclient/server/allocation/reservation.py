"""Giving a node to an allocation, and settling an allocation.

Everything that must be atomic across threads *and* processes is a single
transaction guarded by compare-and-set ``UPDATE ... WHERE`` clauses, so it
works the same on SQLite, PostgreSQL and MariaDB.

Functions whose first argument is a ``Database`` open their own
transaction (``reserve``, ``still_owned``, ``fail_allocation``); the
others take the caller's session and open none.

The one lock order: the node first, then the allocation.  Every path
that touches both (reservation, backfill, every release) follows it, so
two of them wait for each other instead of deadlocking.  The one
exception (an allocation that got its node during a DELETE, see
``release.allocation_for_release``) can deadlock; the database breaks
it and the request runs again.
"""

from __future__ import annotations

import datetime
import enum
import functools
import operator
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    Update,
    bindparam,
    case,
    func,
    insert,
    literal_column,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from baremetal_allocclient import constraints, leases
from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server.allocation.line.queries import (
    ANYONE_WAITING_BEFORE,
    NOBODY_WAITING_BEFORE,
    waiting_before,
)
from baremetal_allocclient.server.allocation.matching import (
    best_fit_query,
    candidate_query,
    filter_params,
    fit_params,
    predicates,
)
from baremetal_allocclient.server.allocation.selection import (
    AnyFilter,
    Candidate,
    Request,
)
from baremetal_allocclient.server.allocation.states import (
    ACTIVE,
    ALLOCATING,
    ERROR,
)
from baremetal_allocclient.server.db.allocation_row import AnyAllocation
from baremetal_allocclient.server.db.driver_statements import (
    AnyConnection,
    DriverStatement,
    driver_statement,
)
from baremetal_allocclient.server.db.engine import (
    Database,
    is_transient,
)
from baremetal_allocclient.server.db.lookups import rowcount
from baremetal_allocclient.server.db.models import (
    Allocation,
    Node,
    utcnow,
)


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


class _Rollback(Exception):
    """Internal: abort the surrounding write transaction."""


def insert_allocation(session: Session | AnyConnection,
                      allocation: AnyAllocation) -> None:
    """Store a new allocation (a record, or a transient ORM object) and
    set its id, in the caller's transaction (a session's or a Core
    connection's).

    One prebuilt INSERT of the columns given (:func:`_insert`) on the
    driver's cursor instead of the ORM's unit of work, whose flush was
    the largest single item of a create in the profile.  The id is the
    database's; unset attributes take their column defaults, as in a
    flush.
    """
    values = {key: value for key, value in zip(
        _INSERTED_COLUMNS, _inserted_attributes(allocation), strict=True)
        if value is not None}
    for key, default in _COLUMN_DEFAULTS:
        if key not in values:
            values[key] = (default.arg(None) if default.is_callable
                           else default.arg)
    conn = (session.connection() if isinstance(session, Session)
            else session)
    allocation.id = _insert(tuple(values), conn.dialect).inserted_id(
        conn, values)


#: Every column an INSERT may give (all but the id), and their values
#: of an allocation, in one call.
_INSERTED_COLUMNS = tuple(column.key for column in Allocation.__table__.columns
                          if not column.primary_key)
_inserted_attributes = operator.attrgetter(*_INSERTED_COLUMNS)
#: (attribute, column default) of those that have a default.
_COLUMN_DEFAULTS = tuple((column.key, column.default)
                         for column in Allocation.__table__.columns
                         if not column.primary_key
                         and column.default is not None)


@functools.lru_cache(maxsize=64)
def _insert(columns: tuple[str, ...], dialect: Dialect) -> DriverStatement:
    """The INSERT of an allocation giving ``columns`` (the others are
    SQL NULL, not JSON ``null``), returning its id where the database
    can."""
    table = Allocation.__table__
    statement = insert(Allocation).values(
        {name: bindparam(name, type_=table.c[name].type)
         for name in columns})
    if dialect.insert_returning:
        statement = statement.returning(Allocation.id)
    return DriverStatement(statement, dialect)


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
#: The lock also reads the node's ``instance_info`` (under the lock), for
#: :func:`_give_node` to merge the traits into, and whether anyone who
#: came earlier waits in line (read, not locked).
_LOCK_CANDIDATE = (
    select(Node.id, Node.instance_info, ANYONE_WAITING_BEFORE)
    .where(Node.id == bindparam("r_node"))
    .with_for_update(skip_locked=True)
)
#: The last search round waits for the lock instead (bounded by the
#: session's lock timeout), so that a node another transaction only
#: looked at, and then left, is not counted as taken.
_LOCK_CANDIDATE_WAITING = (
    select(Node.id, Node.instance_info, ANYONE_WAITING_BEFORE)
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
    select(Allocation.id, Allocation.queue_deadline,
           Allocation.lease_duration)
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
#: The compare-and-set activating an owned allocation that never waited
#: in line (no lease to restart): the ownership check and the activation
#: in one statement.  Matching no row sends the caller to the full check
#: (:data:`_OWNED_ALLOCATION`): waited in line, not ours, or deleted.
_ACTIVATE_OWNED = _ALLOCATION_ACTIVE.where(
    *_OWNED[2:], Allocation.queue_deadline.is_(None))
#: An allocation that waited in line: its lease starts now.
_ALLOCATION_ACTIVE_RELEASED_FROM_LINE = _ALLOCATION_ACTIVE.values(
    lease_expires_at=bindparam("r_lease_end",
                               type_=Allocation.lease_expires_at.type))
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


def _node_given(conn: Any, sqlite: bool, lock: Select[Any],
                filters: tuple[AnyFilter, ...], request: Request,
                params: dict[str, Any]) -> bool:
    """Give the node ``r_node`` to the allocation, in the caller's
    transaction, if it is free, passes every filter and no allocation
    that came earlier waits in line for it: False, and the node
    unchanged, if not.

    Elsewhere the node is locked first (``lock``: a node locked by another
    transaction counts as taken) and read.  SQLite has one writer at a
    time and no row locks, so there the usual case is one statement
    (:func:`_take_free_node_sqlite`); the node is read only when that
    matched nothing and someone earlier waits in line, to ask whether
    any of them matches the node (:func:`waiting_before`)."""
    if sqlite:
        params["r_traits"] = list(request.traits)
        if driver_statement(_take_free_node_sqlite(filters),
                            conn.dialect).rowcount(conn, params) == 1:
            return True
    node = driver_statement(lock, conn.dialect).first(conn, params)
    if node is None:
        return False  # locked by another transaction, or gone
    if sqlite and not node.anyone_waiting_before:
        return False  # taken, or no longer a match
    if node.anyone_waiting_before and waiting_before(
            conn, params["r_allocation"], params["r_node"],
            request.resource_class, params["q_now"]):
        return False  # promised to an earlier one in line
    return _give_node(conn, _take_node(filters), params, request.traits,
                      node)


#: SQLite's ``instance_info`` with the allocation's traits (``r_traits``)
#: set, as :func:`_give_node` merges them: the object's other members
#: kept, in their place (JSON null becomes an object).
_SQLITE_INFO_WITH_TRAITS = func.json_set(
    case((func.json_type(Node.instance_info) == literal_column("'object'"),
          Node.instance_info), else_=literal_column("'{}'")),
    literal_column("'$.traits'"),
    func.json(bindparam("r_traits", type_=Node.instance_info.type)))


@functools.cache
def _take_free_node_sqlite(filters: tuple[AnyFilter, ...]) -> Update:
    """SQLite's reservation of a node in one statement: the compare-and-set
    of :func:`_take_node`, which also requires that no allocation that
    came earlier waits in line, recording the traits in
    ``instance_info`` itself."""
    return _take_node(filters, NOBODY_WAITING_BEFORE).values(
        instance_info=_SQLITE_INFO_WITH_TRAITS)


def _give_node(conn: Any, statement: Update, params: dict[str, Any],
               traits: Sequence[str], locked: Any = None) -> bool:
    """Run a :func:`_take_node` compare-and-set on a node locked by the
    caller, recording ``traits`` in its ``instance_info``.  ``locked``:
    the (id, instance_info) row the caller's lock read, if it did."""
    # Read under the row lock, so no concurrent node update is lost when
    # the traits are merged in.
    if locked is None:
        locked = driver_statement(_NODE_INSTANCE_INFO, conn.dialect).first(
            conn, params)
    info = None if locked is None else locked.instance_info
    params["r_info"] = {**(info if isinstance(info, dict) else {}),
                        "traits": list(traits)}
    return driver_statement(statement, conn.dialect).rowcount(
        conn, params) == 1


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
    Changes the node, then the allocation (the one lock order).  A deadlock
    or serialization failure reported by the database anyway counts as
    losing the node.  ``now`` is the ``updated_at`` to write (callers
    that report it pass their own).  A node locked by another transaction
    counts as taken at once, unless ``wait_for_lock``.

    First come, first served: the node is not given while an earlier
    allocation waiting in line (:func:`waiting_before`) matches it; that
    one takes it on its next attempt.
    """
    lock = _LOCK_CANDIDATE_WAITING if wait_for_lock else _LOCK_CANDIDATE
    now = now or utcnow()
    params: dict[str, Any] = {
        **filter_params(request),
        "r_allocation": allocation_id,
        "r_affinity": affinity,
        "r_node": node_id,
        "r_uuid": allocation_uuid,
        "r_now": now,
        # (the lock's ANYONE_WAITING_BEFORE)
        "q_rc": request.resource_class, "q_now": now,
        "q_before": allocation_id,
    }
    gone = Reservation.NODE_TAKEN
    try:
        with db.write_connection() as conn:
            if not _node_given(conn, db.is_sqlite, lock, tuple(filters),
                               request, params):
                raise _Rollback()
            owned = _owned_or_activated(conn, params)
            if isinstance(owned, Reservation):
                gone = owned
                raise _Rollback()
            if owned is not None:
                activation, values = _activation(owned, params)
                driver_statement(activation, conn.dialect).rowcount(
                    conn, values)
    except _Rollback:
        return gone
    except DBAPIError as exc:
        if not is_transient(exc):
            raise
        return Reservation.NODE_TAKEN
    return Reservation.RESERVED


def _owned_or_activated(conn: Any, params: dict[str, Any]) -> Any:
    """Check that the allocation is still this worker's to settle, with
    its row locked (after the node's: the one lock order).  None: it was
    activated by the one compare-and-set (rolled back with the
    transaction if the node is not given); a row: it waited in line, and
    :func:`_activation` activates it; a :class:`Reservation`: stop."""
    dialect = conn.dialect
    if driver_statement(_ACTIVATE_OWNED, dialect).rowcount(conn, params) == 1:
        return None
    owned = driver_statement(_OWNED_ALLOCATION, dialect).first(conn, params)
    if owned is not None:
        return owned
    exists = driver_statement(_ALLOCATION_EXISTS, dialect).first(
        conn, params) is not None
    return Reservation.NOT_OURS if exists else Reservation.ALLOCATION_DELETED


def _activation(owned: Any, params: dict[str, Any]
                ) -> tuple[Update, dict[str, Any]]:
    """The UPDATE making a reserved allocation ``active``: one that
    waited in line (a queue deadline) gets its lease restarted for the
    duration last asked for, so waiting does not eat the lease."""
    _id, deadline, duration = owned
    if deadline is None or duration is None:
        return _ALLOCATION_ACTIVE, params
    try:
        length = leases.parse_duration(duration)
    except leases.LeaseError:
        return _ALLOCATION_ACTIVE, params
    return _ALLOCATION_ACTIVE_RELEASED_FROM_LINE, {
        **params, "r_lease_end": params["r_now"] + length}


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
                   ) -> Select[Any]:
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


def lock_best_fit_nodes(session: Session, request: Request,
                        filters: Sequence[AnyFilter], count: int
                        ) -> list[Candidate]:
    """Lock up to ``count`` nodes passing all filters, the best-fitting
    first (:func:`matching.best_fit_query`), skipping locked ones."""
    if count <= 0:
        return []
    terms = len(constraints.fit_terms(request.constraints))
    rows = session.connection().execute(
        best_fit_query(tuple(filters), terms, lock=True),
        {**filter_params(request), **fit_params(request), "w_limit": count})
    return [Candidate(int(row[0]), row[1], str(row[2])) for row in rows]


_BACKFILLED_NODE = (Node.provision_state == ns.ACTIVE,)


def backfill(session: Session, allocation: AnyAllocation, node_id: int,
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
