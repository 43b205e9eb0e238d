"""The reservation invariants, read straight from the database.

The checks are pure functions over a :class:`Snapshot` (rows read in one
transaction with SQLAlchemy, not through the server), so a scenario can
judge what is *stored*, whatever the API answered.  Each violation is a
sentence naming the rows involved.

Checked (``doc/source/internals/fault-testing.rst``):

- a node is held by at most one allocation, and an ``active``
  allocation holds exactly one node;
- ``node.allocation_id`` names an existing allocation whose ``node_id``
  is that node, and then ``node.instance_uuid`` is that allocation's
  UUID;
- the node an ``active`` allocation holds matches its request: resource
  class, traits, candidate nodes, owner (node owner or lessee), and the
  constraints extension's constraints (forbidden traits, properties,
  conductor group, shard, node owner/lessee, required name), judged by
  the shared pure model (``baremetal_allocclient.constraints``), not by
  the server's SQL;
- allocation UUIDs are canonical (lower case) and unique ignoring case;
- an allocation waiting in line (``allocating`` with a queue deadline)
  holds no node and no node names it;
- (for the lifecycle scenarios, from the servers' logs) an allocation
  released on lease expiry is gone and its node does not name it;
- once settled, nothing is ``allocating`` and no node is stuck in a
  transition (``target_provision_state`` / ``target_power_state``), and
  every allocation group is whole (all its members exist, ``active``);
- with Placement: the claims are exactly the active allocations.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import create_engine, event, or_, select
from sqlalchemy.engine import Engine

from baremetal_allocclient import constraints as model
from baremetal_allocclient import groups
from baremetal_allocclient.server.db.models import Allocation, Node, NodeTrait


@dataclasses.dataclass(frozen=True)
class NodeRow:
    id: int
    uuid: str
    name: str | None
    resource_class: str | None
    owner: str | None
    lessee: str | None
    allocation_id: int | None
    instance_uuid: str | None
    provision_state: str
    target_provision_state: str | None
    target_power_state: str | None
    traits: frozenset[str]
    properties: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    conductor_group: str = ""
    shard: str | None = None


@dataclasses.dataclass(frozen=True)
class AllocationRow:
    id: int
    uuid: str
    name: str | None
    node_id: int | None
    state: str
    resource_class: str | None
    traits: tuple[str, ...]
    candidate_nodes: tuple[str, ...]
    owner: str | None
    last_error: str | None
    extra: Mapping[str, Any]
    constraints: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    #: Set while (and after) the allocation waited in line.
    queue_deadline: Any = None
    #: Its group as the SDK reads it (``Allocation.marks``): the
    #: ``group_name`` and ``group_size`` columns (never ``extra``).
    marks: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def waiting(self) -> bool:
        """Waiting in line: allocating with a queue deadline."""
        return self.state == "allocating" and self.queue_deadline is not None


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """The rows of one scenario (its resource classes), read at once."""

    nodes: Mapping[int, NodeRow]
    allocations: Mapping[int, AllocationRow]

    def by_uuid(self, uuid: str) -> AllocationRow | None:
        for allocation in self.allocations.values():
            if allocation.uuid == uuid:
                return allocation
        return None


def _explicit_sqlite_transactions(engine: Engine) -> None:
    """Make ``conn.begin()`` a real BEGIN on SQLite: the sqlite3 module
    otherwise runs each SELECT on its own, and a reservation committed
    between reading the nodes and the allocations would look like a
    violation (SQLAlchemy's documented recipe)."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN")


class DatabaseReader:
    """Reads snapshots from the scenario's database (its own engine)."""

    def __init__(self, url: str) -> None:
        # One snapshot per read: at PostgreSQL's default READ COMMITTED
        # each SELECT would see the commits made between them, and a
        # node and its allocation read a moment apart can disagree.
        # (MariaDB's default is REPEATABLE READ; a SQLite read
        # transaction is one snapshot.)
        sqlite = url.startswith("sqlite")
        options = {} if sqlite else {"isolation_level": "REPEATABLE READ"}
        self.engine: Engine = create_engine(url, pool_pre_ping=True,
                                            **options)
        if sqlite:
            _explicit_sqlite_transactions(self.engine)

    def dispose(self) -> None:
        self.engine.dispose()

    def snapshot(self, prefix: str) -> Snapshot:
        """Nodes whose resource class starts with ``prefix``; allocations
        asking for such a class or holding such a node."""
        like = prefix.replace("_", r"\_") + "%"
        with self.engine.connect() as conn, conn.begin():
            node_rows = conn.execute(
                select(Node.id, Node.uuid, Node.name, Node.resource_class,
                       Node.owner, Node.lessee, Node.allocation_id,
                       Node.instance_uuid, Node.provision_state,
                       Node.target_provision_state, Node.target_power_state,
                       Node.properties, Node.conductor_group, Node.shard)
                .where(Node.resource_class.like(like, escape="\\"))
            ).all()
            ids = [int(r[0]) for r in node_rows]
            traits: dict[int, set[str]] = {i: set() for i in ids}
            if ids:
                for node_id, trait in conn.execute(
                    select(NodeTrait.node_id, NodeTrait.trait)
                    .where(NodeTrait.node_id.in_(ids))
                ):
                    traits[int(node_id)].add(str(trait))
            wanted = Allocation.resource_class.like(like, escape="\\")
            if ids:
                wanted = or_(wanted, Allocation.node_id.in_(ids))
            allocation_rows = conn.execute(
                select(Allocation.id, Allocation.uuid, Allocation.name,
                       Allocation.node_id, Allocation.state,
                       Allocation.resource_class, Allocation.traits,
                       Allocation.candidate_nodes, Allocation.owner,
                       Allocation.last_error, Allocation.extra,
                       Allocation.constraints,
                       Allocation.queue_deadline, Allocation.group_name,
                       Allocation.group_size).where(wanted)
            ).all()
        nodes = {
            int(r[0]): NodeRow(
                int(r[0]), str(r[1]), r[2], r[3], r[4], r[5],
                None if r[6] is None else int(r[6]), r[7], str(r[8]),
                r[9], r[10], frozenset(traits[int(r[0])]),
                dict(r[11] or {}), r[12] or "", r[13],
            )
            for r in node_rows
        }
        allocations = {
            int(r[0]): AllocationRow(
                int(r[0]), str(r[1]), r[2],
                None if r[3] is None else int(r[3]), str(r[4]), r[5],
                tuple(r[6] or ()), tuple(r[7] or ()), r[8], r[9],
                dict(r[10] or {}), dict(r[11] or {}), r[12],
                _group_marks(r[13], r[14]),
            )
            for r in allocation_rows
        }
        return Snapshot(nodes, allocations)


# -- the checks: pure functions of a snapshot ---------------------------
def _holding(snapshot: Snapshot) -> dict[int, list[AllocationRow]]:
    held: dict[int, list[AllocationRow]] = {}
    for allocation in snapshot.allocations.values():
        if allocation.node_id is not None:
            held.setdefault(allocation.node_id, []).append(allocation)
    return held


def one_holder_per_node(snapshot: Snapshot) -> list[str]:
    """A node is held by at most one allocation."""
    return [
        f"node {snapshot.nodes[n].uuid if n in snapshot.nodes else n} is "
        f"held by {len(rows)} allocations: "
        + ", ".join(f"{a.uuid} ({a.state})" for a in rows)
        for n, rows in sorted(_holding(snapshot).items())
        if len(rows) > 1
    ]


def node_points_back(snapshot: Snapshot) -> list[str]:
    """node.allocation_id -> an allocation holding that node, whose UUID
    is the node's instance_uuid."""
    found = []
    for node in snapshot.nodes.values():
        if node.allocation_id is None:
            continue
        allocation = snapshot.allocations.get(node.allocation_id)
        if allocation is None:
            found.append(
                f"node {node.uuid} names allocation id "
                f"{node.allocation_id}, which does not exist"
            )
            continue
        if allocation.node_id != node.id:
            other = snapshot.nodes.get(allocation.node_id or -1)
            found.append(
                f"node {node.uuid} names allocation {allocation.uuid} "
                f"({allocation.state}), whose node is "
                f"{other.uuid if other else allocation.node_id}"
            )
        if node.instance_uuid != allocation.uuid:
            found.append(
                f"node {node.uuid} is held by allocation {allocation.uuid} "
                f"but its instance_uuid is {node.instance_uuid}"
            )
    return found


def active_holds_one_node(snapshot: Snapshot) -> list[str]:
    """An active allocation holds exactly one node, which names it;
    an allocation that is not active holds none."""
    found = []
    for allocation in snapshot.allocations.values():
        node = snapshot.nodes.get(allocation.node_id or -1)
        if allocation.state != "active":
            if allocation.node_id is not None:
                found.append(
                    f"allocation {allocation.uuid} is {allocation.state} "
                    f"but holds node "
                    f"{node.uuid if node else allocation.node_id}"
                )
            continue
        if node is None:
            found.append(
                f"active allocation {allocation.uuid} holds no existing "
                f"node (node_id {allocation.node_id})"
            )
        elif node.allocation_id != allocation.id:
            found.append(
                f"active allocation {allocation.uuid} holds node "
                f"{node.uuid}, which names allocation id "
                f"{node.allocation_id} instead"
            )
    return found


def waiting_holds_no_node(snapshot: Snapshot) -> list[str]:
    """An allocation waiting in line holds no node, and no node names
    it: it gets one only by leaving the line (``active``)."""
    waiting = {a.id: a for a in snapshot.allocations.values() if a.waiting}
    found = []
    for allocation in waiting.values():
        if allocation.node_id is not None:
            node = snapshot.nodes.get(allocation.node_id)
            found.append(f"allocation {allocation.uuid} waits in line but "
                         f"holds node "
                         f"{node.uuid if node else allocation.node_id}")
    for node in snapshot.nodes.values():
        if node.allocation_id in waiting:
            found.append(f"node {node.uuid} names allocation "
                         f"{waiting[node.allocation_id].uuid}, which waits "
                         f"in line")
    return found


def released_by_expiry_left_free(
    snapshot: Snapshot, released: Mapping[str, str]
) -> list[str]:
    """Each allocation a server says it released on lease expiry
    (allocation UUID -> node UUID, from its log) is gone, and its node
    is not left naming it: free, or held by a later allocation."""
    found = []
    nodes = {n.uuid: n for n in snapshot.nodes.values()}
    for allocation, node_uuid in sorted(released.items()):
        if snapshot.by_uuid(allocation) is not None:
            found.append(f"allocation {allocation} was released on lease "
                         f"expiry but is still stored")
        node = nodes.get(node_uuid)
        if node is None:
            continue
        if node.instance_uuid == allocation:
            found.append(f"node {node.uuid} still has instance_uuid "
                         f"{allocation}, released on lease expiry")
        if node.allocation_id is None and node.instance_uuid is not None:
            found.append(f"node {node.uuid}, released on lease expiry of "
                         f"{allocation}, holds no allocation but has "
                         f"instance_uuid {node.instance_uuid}")
    return found


def mismatches(allocation: AllocationRow, node: NodeRow) -> list[str]:
    """How ``node`` fails ``allocation``'s request (empty: it matches)."""
    found = []
    if allocation.resource_class != node.resource_class:
        found.append(f"resource class {node.resource_class} is not the "
                     f"requested {allocation.resource_class}")
    missing = set(allocation.traits) - node.traits
    if missing:
        found.append(f"traits {sorted(missing)} are missing")
    if allocation.candidate_nodes and not (
        {node.uuid, node.name} & set(allocation.candidate_nodes)
    ):
        found.append(f"it is not among the candidates "
                     f"{list(allocation.candidate_nodes)}")
    if allocation.owner is not None and allocation.owner not in (
        node.owner, node.lessee
    ):
        found.append(f"owner {node.owner} / lessee {node.lessee} is not "
                     f"the allocation's owner {allocation.owner}")
    return found + constraint_mismatches(allocation, node)


#: Funnel steps that come from the constraints extension.
_CONSTRAINT_KINDS = frozenset({
    model.Kind.NODE_OWNER, model.Kind.NODE_LESSEE,
    model.Kind.FORBIDDEN_TRAITS, model.Kind.PROPERTY,
    model.Kind.CONDUCTOR_GROUP, model.Kind.SHARD, model.Kind.NODE_NAME,
})


def constraint_mismatches(allocation: AllocationRow, node: NodeRow
                          ) -> list[str]:
    """The stored constraints ``node`` fails (empty: none, or none
    asked)."""
    wanted = model.from_wire(allocation.constraints)
    if not wanted:
        return []
    selection = model.Selection(allocation.resource_class or "",
                                constraints=wanted)
    document = {"name": node.name, "properties": node.properties,
                "traits": sorted(node.traits), "owner": node.owner,
                "lessee": node.lessee, "shard": node.shard,
                "conductor_group": node.conductor_group}
    return [f"constraint {step.name(selection)} fails"
            for step in model.steps(selection)
            if step.kind in _CONSTRAINT_KINDS
            and not model.node_passes(step, selection, document)]


def active_matches_request(snapshot: Snapshot) -> list[str]:
    """The node of an active allocation matches its request."""
    found = []
    for allocation in snapshot.allocations.values():
        node = snapshot.nodes.get(allocation.node_id or -1)
        if allocation.state != "active" or node is None:
            continue
        for reason in mismatches(allocation, node):
            found.append(f"active allocation {allocation.uuid} holds node "
                         f"{node.uuid} whose {reason}")
    return found


def canonical_uuids(snapshot: Snapshot) -> list[str]:
    """UUIDs are stored lower case and are unique ignoring case."""
    found = []
    seen: dict[str, str] = {}
    for allocation in sorted(snapshot.allocations.values(),
                             key=lambda a: a.id):
        if allocation.uuid != allocation.uuid.lower():
            found.append(f"allocation UUID {allocation.uuid} is not in "
                         f"canonical lower case")
        first = seen.setdefault(allocation.uuid.lower(), allocation.uuid)
        if first != allocation.uuid:
            found.append(f"allocations {first} and {allocation.uuid} differ "
                         f"only by case")
    return found


def settled(snapshot: Snapshot) -> list[str]:
    """Nothing allocating, no node stuck in a transition."""
    found = [
        f"allocation {a.uuid} is still allocating"
        for a in snapshot.allocations.values() if a.state == "allocating"
    ]
    found += [
        f"node {n.uuid} is stuck in {n.provision_state} (target "
        f"{n.target_provision_state}, power target {n.target_power_state})"
        for n in snapshot.nodes.values()
        if n.target_provision_state or n.target_power_state
    ]
    return found


def _group_marks(name: str | None, size: int | None) -> dict[str, Any]:
    """A group's columns as the marks :mod:`groups` reads."""
    if name is None:
        return {}
    return {groups.GROUP_KEY: name,
            groups.SIZE_KEY: None if size is None else str(size)}


def group_name(allocation: AllocationRow) -> str | None:
    """The group an allocation is a member of (its group field)."""
    return groups.group_of(allocation.marks)


def whole_groups(snapshot: Snapshot) -> list[str]:
    """Every group stored is whole: all of its recorded size of members
    exist and are ``active`` (no half-served group)."""
    found = groups.incomplete_groups(
        (a.uuid, a.marks, a.state) for a in snapshot.allocations.values())
    return [f"group {name} is partial: {why}"
            for name, why in sorted(found.items())]


STRUCTURAL = (one_holder_per_node, node_points_back, active_holds_one_node,
              active_matches_request, canonical_uuids, waiting_holds_no_node)


def violations(snapshot: Snapshot, settle: bool = True) -> list[str]:
    """Every invariant broken by ``snapshot`` (``settle``: also the
    settled-state checks)."""
    checks = STRUCTURAL + ((settled, whole_groups) if settle else ())
    return [v for check in checks for v in check(snapshot)]


def is_settled(snapshot: Snapshot) -> bool:
    """No allocation allocating and no node in a transition."""
    return not settled(snapshot)


def claim_violations(
    snapshot: Snapshot, claims: Iterable[tuple[str, str]]
) -> list[str]:
    """Placement claims (consumer, provider) against the active
    allocations (allocation UUID, node UUID): they must be equal."""
    have = set(claims)
    want = {
        (a.uuid, snapshot.nodes[a.node_id].uuid)
        for a in snapshot.allocations.values()
        if a.state == "active" and a.node_id in snapshot.nodes
    }
    found = [f"active allocation {a} on node {n} has no Placement claim"
             for a, n in sorted(want - have)]
    found += [f"Placement claim of consumer {a} on node {n} belongs to no "
              f"active allocation"
              for a, n in sorted(have - want)]
    return found


def placement_claims(
    get: Any, node_uuids: Sequence[str]
) -> list[tuple[str, str]]:
    """(consumer, provider) of every claim on the given providers;
    ``get(path)`` returns Placement's decoded body or None on 404."""
    claims = []
    for node in node_uuids:
        body = get(f"/resource_providers/{node}/allocations")
        for consumer in (body or {}).get("allocations", {}):
            claims.append((str(consumer), node))
    return claims
