"""Creating allocations: store the row under a worker slot, hand it to
the workers (and, with ``Prefer: wait``, wait for it to settle), or
backfill a deployed node.

Every function here opens its own transactions (its first argument is
the ``Database``); rows are given to the handlers to render.
"""

from __future__ import annotations

import datetime
import logging
import uuid as uuidlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server.allocation import lookup, reservation
from baremetal_allocclient.server.allocation.backends.base import Job
from baremetal_allocclient.server.allocation.line import queries
from baremetal_allocclient.server.allocation.release.refusals import Holder
from baremetal_allocclient.server.allocation.service import committing
from baremetal_allocclient.server.allocation.states import (
    ACTIVE,
    ALLOCATING,
    ERROR,
)
from baremetal_allocclient.server.allocation.wait_permits import WaitPermits
from baremetal_allocclient.server.allocation.workers import (
    AllocationWorkers,
)
from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.allocation_row import (
    AllocationRow,
    AnyAllocation,
)
from baremetal_allocclient.server.db.engine import (
    CommitOutcomeUnknown,
    Database,
    is_unavailable,
    short_reason,
)
from baremetal_allocclient.server.db.models import (
    Allocation,
    Node,
    utcnow,
)
from baremetal_allocclient.server.domain import identifiers, policy
from baremetal_allocclient.server.domain.errors import Busy, Conflict, Invalid
from baremetal_allocclient.server.domain.principal import Principal
from baremetal_allocclient.server.domain.recording import (
    NOT_RECORDED,
    Change,
    Recorder,
)

LOG = logging.getLogger(__name__)


def resolve_candidates(
    session: Session, who: Principal, idents: Sequence[str]
) -> list[str]:
    """The UUIDs of ``candidate_nodes`` (in the caller's transaction, in
    their order, each once); 400 naming every one missing or hidden from
    ``who``."""
    wanted = [(ident, identifiers.is_uuid_like(ident))
              for ident in map(identifiers.canonical_uuid, idents)]
    if not wanted:
        return []
    rows = lookups.nodes_named(
        session, [ident for ident, is_uuid in wanted if is_uuid],
        [ident for ident, is_uuid in wanted if not is_uuid])
    # Text compares exactly on every database (db/collation.py), as here.
    by_uuid = {row.uuid: row for row in rows}
    by_name = {row.name: row for row in rows if row.name is not None}
    found: dict[str, None] = {}
    missing: list[str] = []
    for ident, is_uuid in wanted:
        node = (by_uuid if is_uuid else by_name).get(ident)
        if node is None or not policy.node_visible(
            who, node.owner, node.lessee
        ):
            missing.append(ident)
        else:
            found[node.uuid] = None
    if missing:
        raise Invalid(f"Nodes cannot be found: {', '.join(missing)}")
    return list(found)


def candidates_in_read(
    db: Database, who: Principal, idents: Sequence[str]
) -> list[str]:
    """:func:`resolve_candidates` in a read transaction of its own."""
    with db.read() as session:
        return resolve_candidates(session, who, idents)


def check_unique(
    session: Session, uuid: str | None, name: str | None
) -> None:
    """Clear 409s before an insert (``uuid`` None: generated here, a
    random UUID no row can hold; the unique index is the backstop)."""
    if uuid is not None and lookups.allocation_by_ident(
        session, uuid, by_uuid=True, lock=False
    ):
        raise Conflict(f"An allocation with UUID {uuid} already exists.")
    if name is not None and lookups.allocation_by_ident(
        session, name, by_uuid=False, lock=False
    ):
        raise Conflict(f"An allocation with name {name} already exists.")


def _duplicate(db: Database, uuid: str, name: str | None) -> Conflict:
    """The conflict of an insert the unique indexes refused, naming the
    clashing field (read only on this path, not before every insert)."""
    with db.read() as session:
        try:
            check_unique(session, None, name)
        except Conflict as exc:
            return exc
    return Conflict(f"An allocation with UUID {uuid} already exists.")


def _instance_in_use(session: Session, given_uuid: str | None) -> str | None:
    """Why an allocation whose ``uuid`` is already a node's
    ``instance_uuid`` fails: as in Ironic, it is stored in ``error``
    (Ironic fails it when it tries to give it a node).  The holder may
    belong to a project the caller cannot see, so it is not named."""
    if not given_uuid or not lookups.instance_in_use(session, given_uuid):
        return None
    return (f"Instance {given_uuid} is already associated with a node, it "
            f"cannot be associated with another node.")


@dataclass(frozen=True)
class NewAllocation:
    """A validated create request (not a backfill)."""

    uuid: str | None  # as given; None: one is generated
    name: str | None
    resource_class: str
    traits: list[str]
    candidate_nodes: list[str]  # as given (UUIDs or names)
    extra: dict[str, Any]
    owner: str | None  # as requested (the service decides)
    constraints: dict[str, Any] | None  # the wire form
    queue_deadline: datetime.datetime | None
    created_at: datetime.datetime
    #: The extensions' columns (``allocation/marks.py``): group, lease.
    marks: dict[str, Any] = field(default_factory=dict)


def store(db: Database, workers: AllocationWorkers, new: NewAllocation,
          who: Principal) -> AllocationRow:
    """Store the allocation ``allocating`` (or ``error``, when its UUID is
    already a node's instance), holding a worker slot (:class:`Busy` when
    none is free), its owner as ``who`` may set it.  The slot stays taken
    for an ``allocating`` one (the caller hands it to the workers), and
    is given back otherwise."""
    owner = policy.create_owner(who, new.owner)
    uuid = new.uuid or str(uuidlib.uuid4())
    if not workers.try_reserve_slot():
        raise Busy("The server is busy processing allocations, retry later")
    stored = False
    try:
        if new.candidate_nodes or new.uuid is not None:
            with db.write() as session:
                allocation = _row(new, uuid, owner, workers.affinity,
                                  *_checked(session, who, new))
                reservation.insert_allocation(session, allocation)
        else:  # nothing to look up: no ORM session
            with db.write_connection() as conn:
                allocation = _row(new, uuid, owner, workers.affinity, [], None)
                reservation.insert_allocation(conn, allocation)
        stored = True
    except IntegrityError:
        raise _duplicate(db, uuid, new.name) from None
    except CommitOutcomeUnknown as exc:
        stored = committing.resolved(
            db, exc, committing.stored(allocation.id, uuid))
    finally:
        if not stored or allocation.state == ERROR:
            workers.release_slot()
    return allocation


def _checked(session: Session, who: Principal, new: NewAllocation
             ) -> tuple[list[str], str | None]:
    """The reads before an insert: the candidates' UUIDs (400 for a
    missing one), a clear 409 for a given UUID in use, and why the
    allocation fails at once (its UUID already a node's instance)."""
    candidates = resolve_candidates(session, who, new.candidate_nodes)
    # A duplicate name is left to the unique index: checking first
    # would cost every creation a query.
    check_unique(session, new.uuid, None)
    return candidates, _instance_in_use(session, new.uuid)


def _row(new: NewAllocation, uuid: str, owner: str | None, affinity: str,
         candidates: list[str], failed: str | None) -> AllocationRow:
    """The allocation to insert: ``allocating``, or ``error`` saying
    ``failed``."""
    return AllocationRow(
        uuid=uuid,
        name=new.name,
        state=ERROR if failed else ALLOCATING,
        last_error=failed or None,
        resource_class=new.resource_class,
        traits=new.traits,
        candidate_nodes=candidates,
        extra=new.extra,
        owner=owner,
        constraints=new.constraints,
        conductor_affinity=affinity,
        queue_deadline=new.queue_deadline,
        created_at=new.created_at,
        **new.marks,
    )


@dataclass(frozen=True)
class Answer:
    """What to show for a created allocation."""

    allocation: AnyAllocation
    node_uuid: str | None
    #: Read back or reported by its worker (not merely as stored), so
    #: its funnel text may be shown.
    settled: bool
    #: ``Prefer: wait`` was applied.
    waited: bool
    #: 1-based place in line, when ``line_scope`` asked for it and it
    #: still waits.
    position: int | None


@dataclass(frozen=True)
class LineScope:
    """Whose allocations a place in line counts: ``project`` (None: all,
    an admin's view)."""

    project: str | None


def create(db: Database, workers: AllocationWorkers, permits: WaitPermits,
           new: NewAllocation, who: Principal, wait: float,
           scope: LineScope | None) -> Answer:
    """Store a new allocation and hand it to the workers (waiting up to
    ``wait`` seconds for it to settle, with a free permit); with
    ``scope``, also its place in line.  One call: every input is parsed
    before it, and nothing between the insert and the hand-over can
    leave the row ``allocating`` with nobody working on it."""
    allocation = store(db, workers, new, who)
    workers.recorder.changed(Change(allocation.uuid, allocation.owner, None,
                                    allocation.state, None, "request"))
    if allocation.state == ERROR:  # failed at once: no slot held
        return Answer(allocation, None, False, False, None)
    return hand_over(db, workers, permits, allocation, wait, scope)


def hand_over(db: Database, workers: AllocationWorkers,
              permits: WaitPermits, allocation: AllocationRow, wait: float,
              scope: LineScope | None) -> Answer:
    """Give a stored ``allocating`` allocation (its slot held) to the
    workers; with ``wait`` (and a free permit) wait up to that long for
    it to settle.  With ``scope``, also its place in line.

    Until the workers have it, an unexpected error fails the allocation
    and gives its slot back (:meth:`AllocationWorkers.abandon`); from
    then on they answer for both."""
    try:
        job = workers.job_for(allocation)
        waits = bool(wait) and permits.try_acquire()
    except Exception:
        workers.abandon(allocation.id, allocation.uuid)
        raise
    if not waits:
        workers.submit(allocation.id, allocation.uuid, job)
        return Answer(allocation, None, False, False,
                      place_in_line(db, allocation, scope))
    try:
        shown, node_uuid, settled = _settle(db, workers, allocation, job,
                                            wait)
        return Answer(shown, node_uuid, settled, True,
                      place_in_line(db, allocation, scope, shown))
    finally:
        permits.release()


def place_in_line(db: Database, allocation: AnyAllocation,
                  scope: LineScope | None,
                  shown: AnyAllocation | None = None) -> int | None:
    """The place in line of an allocation waiting in line (in the state
    ``shown`` has, by default its own), None for anything else, without
    ``scope``, or when the database does not answer."""
    state = (shown or allocation).state
    if (scope is None or allocation.queue_deadline is None
            or state != ALLOCATING):
        return None
    try:
        with db.read() as session:
            position = queries.queue_position(
                session, allocation, utcnow(), scope.project)
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        return None  # the allocation is stored; answer it as it is
    if position < 1:  # settled or out of time since it was read
        return None
    return position


def _settle(db: Database, workers: AllocationWorkers,
            allocation: AllocationRow, job: Job, wait: float
            ) -> tuple[AnyAllocation, str | None, bool]:
    """The committed allocation after waiting up to ``wait`` seconds for
    it to settle, its node's UUID, and whether it is more than as stored.

    The worker's report saves reading the row back; without one (not
    settled within the wait, or the backend could not say) the row is
    read.  The row is committed, so nothing here may turn into an error
    that invites a retry (a retried create is a second allocation): if
    the wait or the read fails, the answer is the allocation as stored.
    """
    try:
        settled = workers.settle(allocation.id, job, wait)
        if settled is not None:
            allocation.state = settled.state
            allocation.last_error = settled.last_error
            allocation.funnel_error = settled.funnel_error
            allocation.updated_at = settled.updated_at
            return allocation, settled.node_uuid, True
        with db.read() as session:
            current: AnyAllocation | None = session.get(Allocation,
                                                        allocation.id)
            if current is None:  # deleted meanwhile: answer what was made
                current = allocation
            return current, _node_uuid(session, current), True
    except Exception as exc:
        if is_unavailable(exc):
            LOG.warning("Allocation %s is stored; answering it as stored, "
                        "the database became unavailable: %s",
                        allocation.uuid, short_reason(exc))
        else:
            LOG.exception("Allocation %s is stored; answering it as "
                          "stored after an unexpected error",
                          allocation.uuid)
        return allocation, None, False


def _node_uuid(session: Session, allocation: AnyAllocation
               ) -> str | None:
    if allocation.node_id is None:
        return None
    return lookups.node_uuid(session, allocation.node_id)


@dataclass(frozen=True)
class Backfill:
    """A validated backfill request (``node`` given)."""

    uuid: str | None
    name: str | None
    resource_class: str | None  # None: the node's
    traits: list[str]
    candidate_nodes: list[str]  # as given (UUIDs or names)
    extra: dict[str, Any]
    owner: str | None  # as requested (the service decides)
    node: str  # the deployed node's UUID or name
    #: The extensions' columns (``allocation/marks.py``): group, lease.
    marks: dict[str, Any] = field(default_factory=dict)


def backfill(db: Database, affinity: str, new: Backfill, who: Principal,
             recorder: Recorder = NOT_RECORDED, holder: Holder | None = None
             ) -> tuple[AllocationRow, str]:
    """Create an ``active`` allocation for the already deployed node
    ``new.node`` names (as ``who`` may see it); the allocation and its
    node's UUID.

    Unlike Ironic, a mismatch is :class:`Invalid` or :class:`Conflict`
    and nothing is stored.  The node is locked first (the one lock
    order) and given to the new allocation with the same compare-and-set
    as a worker's reservation, so two backfills of one node never both
    succeed.  With a ``holder`` (Ironic behind the broker) the node's
    facts are read from it first, and it records the allocation too,
    before the server commits.
    """
    owner = policy.create_owner(who, new.owner)
    if holder is not None:
        holder.refresh_node(new.node)
    with db.write() as session:
        named = lookup.node_as_filter_argument(session, new.node, who)
        node = lookups.node_by_ident(session, named.uuid, by_uuid=True)
        if node is None:  # deleted since it was looked up
            raise Invalid(f"Node {named.uuid} could not be found.")
        uuid = new.uuid or node.instance_uuid or str(uuidlib.uuid4())
        rc = new.resource_class or node.resource_class
        candidates = resolve_candidates(session, who, new.candidate_nodes)
        _check_backfill(session, node, rc, new.traits, candidates)
        check_unique(session, uuid, new.name)
        now = utcnow()
        allocation = AllocationRow(
            uuid=uuid,
            name=new.name,
            state=ACTIVE,
            node_id=node.id,
            resource_class=rc,
            traits=new.traits,
            candidate_nodes=candidates,
            extra=new.extra,
            owner=owner,
            conductor_affinity=affinity,
            created_at=now,
            updated_at=now,
            **new.marks,
        )
        reservation.insert_allocation(session, allocation)
        if not reservation.backfill(session, allocation, node.id, now):
            raise Conflict(
                f"Node {node.uuid} is associated with instance "
                f"{node.instance_uuid}."
            )
        node_uuid = node.uuid
        if holder is not None:
            holder.backfill(uuid, node_uuid, rc, new.traits, owner)
    recorder.changed(Change(allocation.uuid, owner, None, ACTIVE, node_uuid,
                            "request"))
    return allocation, node_uuid


def _check_backfill(
    session: Session, node: Node, rc: str | None, traits: list[str],
    candidates: list[str],
) -> None:
    """400/409 when the deployed node does not match the request."""
    node_traits = lookups.node_traits(session, node.id)
    errors = []
    if rc != node.resource_class:
        errors.append(
            f"Resource class {node.resource_class} does not match the "
            f"requested resource class {rc}"
        )
    if not set(traits) <= node_traits:
        errors.append(
            f"List of traits {sorted(node_traits)} does not match the "
            f"requested traits {traits}"
        )
    if candidates and node.uuid not in candidates:
        errors.append(
            f"Candidate nodes must be empty or contain the target "
            f"node, but got {candidates}"
        )
    if node.provision_state != ns.ACTIVE:
        errors.append(
            f'Node must be in the "active" state, but the current '
            f'state is "{node.provision_state}"'
        )
    if errors:
        refusal = Invalid if len(errors) > 1 or (
            node.provision_state == ns.ACTIVE
        ) else Conflict
        raise refusal(f"Cannot backfill an allocation for node {node.uuid}: "
                      f"{'; '.join(errors)}")
