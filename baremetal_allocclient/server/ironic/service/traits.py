"""A node's traits: read, replace, add and remove them."""

from __future__ import annotations

from collections.abc import Sequence

from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Node
from baremetal_allocclient.server.db.node_lookup import visible_node
from baremetal_allocclient.server.domain.errors import Invalid, NotFound
from baremetal_allocclient.server.domain.policy import NodeScope
from baremetal_allocclient.server.ironic import node_rows

#: The most traits a node may have (as many as a request may name).
MAX_TRAITS = schemas.MAX_TRAITS


def _check_count(node: Node, traits: Sequence[str]) -> None:
    if len(set(traits)) > MAX_TRAITS:
        raise Invalid(
            f"Could not add trait(s) to node {node.uuid}: a node can have "
            f"at most {MAX_TRAITS} traits"
        )


def of_node(db: Database, scope: NodeScope, ident: str) -> list[str]:
    """The node's traits, sorted."""
    with db.read() as session:
        node = visible_node(session, scope, ident)
        return lookups.traits_of(session, [node.id])[node.id]


def replace(db: Database, scope: NodeScope, ident: str,
            traits: Sequence[str]) -> None:
    """Set the node's traits to exactly ``traits`` (400 over
    :data:`MAX_TRAITS`)."""
    with db.write() as session:
        node = visible_node(session, scope, ident)
        _check_count(node, traits)
        lookups.replace_traits(session, node.id, traits)
        lookups.touch_node(session, node.id)


def add(db: Database, scope: NodeScope, ident: str, trait: str) -> None:
    """Add one trait (nothing when the node has it; 400 over
    :data:`MAX_TRAITS`)."""
    with db.write() as session:
        node = visible_node(session, scope, ident)
        current = lookups.traits_of(session, [node.id])[node.id]
        if trait not in current:
            _check_count(node, [*current, trait])
            node_rows.add_trait(session, node.id, trait)
            lookups.touch_node(session, node.id)


def remove(db: Database, scope: NodeScope, ident: str, trait: str) -> None:
    """Remove one trait (404 when the node does not have it)."""
    with db.write() as session:
        node = visible_node(session, scope, ident)
        if not node_rows.remove_trait(session, node.id, trait):
            raise NotFound(
                f"Node {node.uuid} doesn't have a trait '{trait}'"
            )
        lookups.touch_node(session, node.id)


def remove_all(db: Database, scope: NodeScope, ident: str) -> None:
    """Remove every trait of the node."""
    with db.write() as session:
        node = visible_node(session, scope, ident)
        lookups.replace_traits(session, node.id, [])
        lookups.touch_node(session, node.id)
