"""A node a request names, as its caller may see it (both wings).

By UUID, or by name from API 1.5; a node the caller may not see is as
missing as one that does not exist.  The caller says who is asking and
whether names are allowed (:class:`~baremetal_allocclient.server.domain.
policy.NodeScope`), so a service needs no request context.  Functions
take the caller's session and open no transaction.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, or_
from sqlalchemy.orm import Session

from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.models import Node
from baremetal_allocclient.server.domain import identifiers, policy
from baremetal_allocclient.server.domain.errors import Invalid, NotFound
from baremetal_allocclient.server.domain.principal import Principal


def visible(who: Principal, node: Node) -> bool:
    """May ``who`` see ``node`` (its owner or lessee; pure)."""
    return policy.node_visible(who, node.owner, node.lessee)


def node_filter(who: Principal) -> ColumnElement[bool] | None:
    """A WHERE clause restricting nodes to visible ones; None for admins."""
    if who.admin:
        return None
    return or_(Node.owner == who.project, Node.lessee == who.project)


def visible_node(session: Session, scope: policy.NodeScope,
                 ident: str) -> Node:
    """A node by UUID or (when ``scope.names``) name, locked in a write;
    :class:`NotFound` when missing or hidden, :class:`Invalid` for a
    malformed name."""
    ident = identifiers.canonical_uuid(ident)
    if identifiers.is_uuid_like(ident):
        node = lookups.node_by_ident(session, ident, by_uuid=True)
    elif scope.names:
        if not identifiers.is_valid_name(ident):
            raise Invalid(
                f"Expected a logical name or UUID but received {ident}."
            )
        node = lookups.node_by_ident(session, ident, by_uuid=False)
    else:
        node = None
    if node is None or not visible(scope.who, node):
        raise NotFound(f"Node {ident} could not be found.")
    return node
