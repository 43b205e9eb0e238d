"""The mirror: the node facts selection reads, copied from Ironic.

:func:`facts` is the pure mapping of one Ironic node document to the
columns the server keeps; :func:`apply` writes a batch of them in the
caller's transaction.  Ironic owns every reservation, so the mirror's
holder columns follow two rules:

* A node no allocation of this server holds takes Ironic's
  ``instance_uuid``: a node reserved directly in Ironic (or deployed with
  an instance) is taken, and selection never offers it; but a node
  Ironic holds for one of the server's own allocations still
  ``allocating`` (a claim its worker has not recorded yet) stays free
  here, for that worker's reservation.
* A node an allocation of this server holds keeps it, unless Ironic
  shows the node held by nothing or by someone else and the allocation
  last changed before the Ironic read began (a claim in flight is never
  undone by an older read): the node was torn down or deleted in Ironic,
  which deletes the allocation there, and the server then deletes its own.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Select, or_, select
from sqlalchemy.orm import Session

from baremetal_allocclient.server.allocation.release import freeing
from baremetal_allocclient.server.allocation.states import ALLOCATING
from baremetal_allocclient.server.db.models import (
    Allocation,
    Node,
    NodeTrait,
    utcnow,
)
from baremetal_allocclient.server.ironic import node_rows

LOG = logging.getLogger(__name__)

#: Ironic node fields copied as they are, with the value when absent.
COPIED: Mapping[str, Any] = {
    "name": None, "driver": "fake-hardware", "resource_class": None,
    "provision_state": "enroll", "target_provision_state": None,
    "power_state": None, "target_power_state": None, "maintenance": False,
    "maintenance_reason": None, "owner": None, "lessee": None,
    "conductor_group": "", "shard": None, "properties": {},
    "instance_info": {}, "protected": False, "retired": False,
    "description": None, "last_error": None, "fault": None,
}


@dataclass(frozen=True)
class NodeFacts:
    """One Ironic node as the mirror keeps it."""

    uuid: str
    columns: Mapping[str, Any]
    traits: tuple[str, ...]
    instance_uuid: str | None
    allocation_uuid: str | None


def facts(node: Mapping[str, Any]) -> NodeFacts:
    """The mirror's view of one Ironic node document (pure)."""
    columns = {key: (node.get(key) if node.get(key) is not None
                     else default)
               for key, default in COPIED.items()}
    columns["conductor_group"] = columns["conductor_group"] or ""
    traits = node.get("traits") or []
    return NodeFacts(
        uuid=str(node["uuid"]), columns=columns,
        traits=tuple(sorted({str(t) for t in traits})),
        instance_uuid=node.get("instance_uuid"),
        allocation_uuid=node.get("allocation_uuid"),
    )


@dataclass
class Applied:
    """What one :func:`apply` changed."""

    added: int = 0
    updated: int = 0
    deleted: int = 0
    released: list[str] | None = None
    #: (allocation, node) the read shows Ironic no longer holds for the
    #: allocation: :func:`release_if_still_held` once Ironic confirms.
    suspects: list[tuple[str, str]] = field(default_factory=list)


def release_if_still_held(session: Session, allocation_uuid: str,
                          node_uuid: str) -> bool:
    """Delete the allocation, freeing its node, if it still holds that
    node (Ironic confirmed it no longer does); whether it did."""
    node = session.scalars(select(Node).where(
        Node.uuid == node_uuid).with_for_update()).first()
    if node is None:
        return False
    holder = freeing.holder_of(session, node)
    if holder is None or holder.uuid != allocation_uuid:
        return False
    LOG.info("Allocation %s released: Ironic no longer holds node %s for "
             "it", allocation_uuid, node_uuid)
    freeing.release_in_session(session, holder)
    return True


def apply(session: Session, batch: Iterable[NodeFacts],
          read_started: datetime.datetime, complete: bool = False
          ) -> Applied:
    """Write ``batch`` (read from Ironic from ``read_started`` on) into
    the mirror; with ``complete`` (every node of Ironic), mirror nodes
    Ironic no longer has are deleted with their allocations."""
    wanted = {f.uuid: f for f in batch}
    existing = {node.uuid: node for node in session.scalars(
        select(Node).where(Node.uuid.in_(list(wanted))).with_for_update()
    )} if wanted else {}
    applied = Applied(released=[])
    _clear_moved_names(session, wanted, existing)
    in_flight = _claims_in_flight(session, wanted.values())
    now = utcnow()
    for uuid, fact in wanted.items():
        if fact.allocation_uuid in in_flight:
            # Claimed in Ironic by one of the server's own allocations
            # whose worker has not recorded it yet: still free here, so
            # that the worker's reservation can take it.
            fact = dataclasses.replace(fact, instance_uuid=None)
        node = existing.get(uuid)
        if node is None:
            node = Node(uuid=uuid, created_at=now, **fact.columns)
            node.instance_uuid = fact.instance_uuid
            node_rows.add_node(session, node)
            applied.added += 1
        elif _update(session, node, fact, read_started, applied):
            applied.updated += 1
        _set_traits(session, node.id, fact.traits)
    if complete:
        applied.deleted = _delete_vanished(session, set(wanted),
                                           read_started, applied)
    return applied


def _claims_in_flight(session: Session, batch: Iterable[NodeFacts]
                      ) -> set[str]:
    """The allocation UUIDs holding nodes in Ironic that are the
    server's own allocations still ``allocating``."""
    held = [f.allocation_uuid for f in batch if f.allocation_uuid]
    if not held:
        return set()
    return {str(u) for u in session.scalars(select(Allocation.uuid).where(
        Allocation.uuid.in_(held), Allocation.state == ALLOCATING))}


def _clear_moved_names(session: Session, wanted: Mapping[str, NodeFacts],
                       existing: Mapping[str, Node]) -> None:
    """Names move between nodes (a rename, a swap): clear every name
    about to change first, so no two rows share one in between."""
    moved = False
    for uuid, node in existing.items():
        if node.name is not None and node.name != wanted[uuid].columns[
                "name"]:
            node.name = None
            moved = True
    names = [f.columns["name"] for f in wanted.values() if f.columns["name"]]
    if names:
        for other in session.scalars(select(Node).where(
                Node.name.in_(names), Node.uuid.not_in(list(wanted)))):
            other.name = None
            moved = True
    if moved:
        session.flush()


def _update(session: Session, node: Node, fact: NodeFacts,
            read_started: datetime.datetime, applied: Applied) -> bool:
    """Bring one mirror node to Ironic's facts; whether it changed."""
    changed = False
    for key, value in fact.columns.items():
        if getattr(node, key) != value:
            setattr(node, key, value)
            changed = True
    if node.allocation_id is None:
        if node.instance_uuid != fact.instance_uuid:
            node.instance_uuid = fact.instance_uuid
            changed = True
    else:
        holder = session.get(Allocation, node.allocation_id)
        if holder is not None and holder.uuid != fact.allocation_uuid and (
                holder.updated_at is None
                or holder.updated_at < read_started):
            # Asked of Ironic again before anything is released: a claim
            # made after this read began is not undone (a group's claims
            # are made after its rows are written).
            applied.suspects.append((holder.uuid, node.uuid))
    if changed:
        node.updated_at = utcnow()
    return changed


def _set_traits(session: Session, node_id: int,
                traits: tuple[str, ...]) -> None:
    have = set(session.scalars(select(NodeTrait.trait).where(
        NodeTrait.node_id == node_id)))
    for trait in have - set(traits):
        node_rows.remove_trait(session, node_id, trait)
    for trait in set(traits) - have:
        node_rows.add_trait(session, node_id, trait)


def _delete_vanished(session: Session, present: set[str],
                     read_started: datetime.datetime,
                     applied: Applied) -> int:
    """Delete mirror nodes Ironic no longer lists, except those written
    since the read began."""
    return _delete_nodes(session, select(Node).where(
        Node.uuid.not_in(list(present)) if present else Node.id > 0),
        read_started, applied)


def remove(session: Session, idents: Iterable[str],
           read_started: datetime.datetime, applied: Applied) -> int:
    """Delete the mirror nodes (by UUID or name) Ironic says it no longer
    has, except those written since the read began."""
    names = list(idents)
    return _delete_nodes(session, select(Node).where(
        or_(Node.uuid.in_(names), Node.name.in_(names))),
        read_started, applied)


def _delete_nodes(session: Session, query: Select[Any],
                  read_started: datetime.datetime, applied: Applied) -> int:
    """Delete the nodes ``query`` finds with their allocations (as
    Ironic deletes a node's allocation with it)."""
    count = 0
    for node in session.scalars(query):
        stamp = node.updated_at or node.created_at
        if stamp is not None and stamp >= read_started:
            continue
        holder = freeing.holder_of(session, node)
        if holder is not None:
            assert applied.released is not None
            applied.released.append(holder.uuid)
            freeing.release_in_session(session, holder)
            session.refresh(node)
        node_rows.delete_node(session, node)
        count += 1
    return count
