"""Rows that belong to a node (traits).  Every function takes the
caller's session and opens no transaction."""

from __future__ import annotations

from sqlalchemy import delete
from sqlalchemy.orm import Session

from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.models import NodeTrait


def add_trait(session: Session, node_id: int, trait: str) -> None:
    """Add one trait (the caller checked the node does not have it)."""
    session.add(NodeTrait(node_id=node_id, trait=trait))


def remove_trait(session: Session, node_id: int, trait: str) -> bool:
    """Remove one trait; False when the node did not have it."""
    result = session.execute(delete(NodeTrait).where(
        NodeTrait.node_id == node_id, NodeTrait.trait == trait))
    return lookups.rowcount(result) != 0
