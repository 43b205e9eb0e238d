"""VIF rows of a node.  Every function takes the caller's session and
opens no transaction."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.models import NodeVif, utcnow


def vif_ids(session: Session, node_id: int) -> list[str]:
    """The VIFs attached to a node, in the order they were attached."""
    return list(session.scalars(
        select(NodeVif.vif_id).where(NodeVif.node_id == node_id)
        .order_by(NodeVif.created_at, NodeVif.vif_id)))


def attach_vif(session: Session, node_id: int, vif: str) -> None:
    """Attach a VIF (the caller checked it is not attached yet)."""
    session.add(NodeVif(node_id=node_id, vif_id=vif, created_at=utcnow()))


def detach_vif(session: Session, node_id: int, vif: str) -> bool:
    """Detach one VIF; False when it was not attached."""
    result = session.execute(delete(NodeVif).where(
        NodeVif.node_id == node_id, NodeVif.vif_id == vif))
    return lookups.rowcount(result) != 0


def detach_vifs(session: Session, node_id: int) -> None:
    """Detach every VIF of a node (tear down), like Ironic's
    ``remove_vifs_from_node``."""
    session.execute(delete(NodeVif).where(NodeVif.node_id == node_id))
