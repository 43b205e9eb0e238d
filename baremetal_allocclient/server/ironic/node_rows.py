"""Node rows and the rows that belong to a node.  Every function takes
the caller's session and opens no transaction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.models import (
    Allocation,
    Node,
    NodeTrait,
    NodeVif,
    Port,
)


def add_node(session: Session, node: Node) -> None:
    """Insert a new node now (its id set; a uniqueness violation raised
    here)."""
    session.add(node)
    session.flush()


def add_trait(session: Session, node_id: int, trait: str) -> None:
    """Add one trait (the caller checked the node does not have it)."""
    session.add(NodeTrait(node_id=node_id, trait=trait))


def remove_trait(session: Session, node_id: int, trait: str) -> bool:
    """Remove one trait; False when the node did not have it."""
    result = session.execute(delete(NodeTrait).where(
        NodeTrait.node_id == node_id, NodeTrait.trait == trait))
    return lookups.rowcount(result) != 0


@dataclass(frozen=True)
class Related:
    """What a node's view shows from other rows."""

    traits: dict[int, list[str]]  # by node id, sorted
    allocation_uuids: dict[int, str]  # by allocation id


def related(session: Session, nodes: Sequence[Node]) -> Related:
    """The traits and allocation UUIDs of ``nodes`` (two queries at
    most)."""
    ids = [n.id for n in nodes]
    traits = lookups.traits_of(session, ids)
    alloc_ids = [n.allocation_id for n in nodes if n.allocation_id]
    alloc_uuids: dict[int, str] = {}
    if alloc_ids:
        rows = session.execute(
            select(Allocation.id, Allocation.uuid).where(
                Allocation.id.in_(alloc_ids)
            )
        )
        alloc_uuids = {int(aid): str(auuid) for aid, auuid in rows}
    return Related(traits, alloc_uuids)


def instance_taken(session: Session, instance_uuid: str, node_id: int
                   ) -> bool:
    """Whether another node has ``instance_uuid``, or an allocation has
    it as its UUID."""
    holder = session.scalar(
        select(Node.uuid).where(
            Node.instance_uuid == instance_uuid, Node.id != node_id
        )
    )
    taken = session.scalar(select(Allocation.id).where(
        Allocation.uuid == instance_uuid))
    return holder is not None or taken is not None


def delete_node(session: Session, node: Node) -> None:
    """Delete a node with the rows that belong to it (its allocation was
    released by the caller)."""
    session.execute(
        delete(Allocation)
        .where(Allocation.node_id == node.id)
        .execution_options(synchronize_session=False)
    )
    for model in (NodeTrait, Port, NodeVif):  # what belongs to it
        session.execute(delete(model).where(model.node_id == node.id))
    session.delete(node)


def shard_counts(session: Session) -> list[tuple[int, str]]:
    """(node count, shard) for every shard; nodes without a shard count
    as shard "None"."""
    rows = session.execute(
        select(func.count(Node.id), Node.shard).group_by(Node.shard))
    return [(int(count), str(shard)) for count, shard in rows]
