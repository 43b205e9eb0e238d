"""VIF rows of a node."""

from __future__ import annotations

from sqlalchemy import (
    delete,
)
from sqlalchemy.orm import Session

from baremetal_allocclient.server.db.models import (
    NodeVif,
)


def detach_vifs(session: Session, node_id: int) -> None:
    """Detach every VIF of a node (tear down), like Ironic's
    ``remove_vifs_from_node``."""
    session.execute(delete(NodeVif).where(NodeVif.node_id == node_id))
