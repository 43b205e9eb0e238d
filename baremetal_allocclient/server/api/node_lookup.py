"""A node a request names, as its caller may see it (both wings).

By UUID, or by name from API 1.5; a node the caller may not see is as
missing as one that does not exist.  The caller says who is asking and
whether names are allowed (:class:`NodeScope`), so a service needs no
request context; :func:`~baremetal_allocclient.server.api.context.
node_scope` builds the scope of a request.  Functions take the caller's
session and open no transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from baremetal_allocclient.server.api import policy, schemas
from baremetal_allocclient.server.api.auth import Principal
from baremetal_allocclient.server.api.errors import bad_request, not_found
from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.models import Node


@dataclass(frozen=True)
class NodeScope:
    """Who looks for nodes, and how they may name them."""

    who: Principal
    #: Whether a node may be named (API 1.5); else by UUID only.
    names: bool


def visible(who: Principal, node: Node) -> bool:
    """May ``who`` see ``node`` (its owner or lessee; pure)."""
    return policy.node_visible(who, node.owner, node.lessee)


def visible_node(session: Session, scope: NodeScope, ident: str) -> Node:
    """A node by UUID or (when ``scope.names``) name, locked in a write;
    404 when missing or hidden, 400 for a malformed name."""
    ident = schemas.canonical_uuid(ident)
    if schemas.is_uuid_like(ident):
        node = lookups.node_by_ident(session, ident, by_uuid=True)
    elif scope.names:
        if not schemas.is_valid_name(ident):
            raise bad_request(
                f"Expected a logical name or UUID but received {ident}."
            )
        node = lookups.node_by_ident(session, ident, by_uuid=False)
    else:
        node = None
    if node is None or not visible(scope.who, node):
        raise not_found(f"Node {ident} could not be found.")
    return node
