"""Putting a node in maintenance and taking it out."""

from __future__ import annotations

from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import utcnow
from baremetal_allocclient.server.db.node_lookup import visible_node
from baremetal_allocclient.server.domain.policy import NodeScope


def enter(db: Database, scope: NodeScope, ident: str,
          reason: str | None) -> None:
    """Put the node in maintenance, for ``reason``."""
    with db.write() as session:
        node = visible_node(session, scope, ident)
        node.maintenance = True
        node.maintenance_reason = reason
        node.updated_at = utcnow()


def leave(db: Database, scope: NodeScope, ident: str) -> None:
    """Take the node out of maintenance; its reason and fault go."""
    with db.write() as session:
        node = visible_node(session, scope, ident)
        node.maintenance = False
        node.maintenance_reason = None
        node.fault = None
        node.updated_at = utcnow()
