"""Read the node facts Placement mirrors, in two queries."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from baremetal_allocclient.server.allocation.placement.model import NodeFacts
from baremetal_allocclient.server.db.models import Allocation, Node, NodeTrait


def node_facts(
    session: Session,
    uuids: Sequence[str] | None = None,
    resource_class: str | None = None,
    visible: ColumnElement[bool] | None = None,
) -> list[NodeFacts]:
    """Facts of all nodes (or the given UUIDs / one resource class /
    those matching ``visible``)."""
    query = select(
        Node.id, Node.uuid, Node.name, Node.resource_class,
        Node.provision_state, Node.maintenance, Node.power_state,
        Node.instance_uuid, Allocation.uuid, Node.owner, Node.lessee,
        Node.parent_node,
    ).outerjoin(Allocation, Allocation.id == Node.allocation_id)
    if uuids is not None:
        query = query.where(Node.uuid.in_(list(uuids)))
    if resource_class is not None:
        query = query.where(Node.resource_class == resource_class)
    if visible is not None:
        query = query.where(visible)
    rows = list(session.execute(query))
    ids = [int(row[0]) for row in rows]
    traits: dict[int, set[str]] = {nid: set() for nid in ids}
    if ids:
        trait_query = select(NodeTrait.node_id, NodeTrait.trait)
        if len(ids) < 500:
            trait_query = trait_query.where(NodeTrait.node_id.in_(ids))
        for node_id, trait in session.execute(trait_query):
            if node_id in traits:
                traits[node_id].add(trait)
    return [
        NodeFacts(
            uuid=row[1], name=row[2], resource_class=row[3],
            provision_state=row[4], maintenance=bool(row[5]),
            power_state=row[6], instance_uuid=row[7],
            allocation_uuid=row[8], owner=row[9], lessee=row[10],
            parent_node=row[11],
            traits=frozenset(traits[int(row[0])]),
        )
        for row in rows
    ]


def active_claims(session: Session) -> dict[str, tuple[str, str | None]]:
    """Active allocation UUID -> (node UUID, owner)."""
    rows = session.execute(
        select(Allocation.uuid, Node.uuid, Allocation.owner)
        .join(Node, Node.id == Allocation.node_id)
        .where(Allocation.state == "active")
    )
    return {str(a): (str(n), o) for a, n, o in rows}


def allocation_states(
    session: Session, uuids: Sequence[str]
) -> dict[str, str]:
    """State of each named allocation that exists."""
    if not uuids:
        return {}
    rows = session.execute(
        select(Allocation.uuid, Allocation.state)
        .where(Allocation.uuid.in_(list(uuids)))
    )
    return {str(u): str(s) for u, s in rows}
