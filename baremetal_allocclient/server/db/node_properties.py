"""Keep ``node_properties`` in step with ``Node.properties``.

Every write of a node's properties goes through the ORM (node create and
PATCH, enrollment), so the mapper's ``after_insert``/``after_update``
events write the normalized rows of each node whose ``properties``
changed, on the flush's connection (the same transaction).  Bulk
``UPDATE`` statements on ``nodes.properties`` would bypass them; there
are none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, delete, event, insert, inspect
from sqlalchemy.orm import Mapper

from baremetal_allocclient import constraints
from baremetal_allocclient.server.db.models import Node, NodeProperty


def rows_for(node_id: int, properties: Mapping[str, Any]
             ) -> list[dict[str, Any]]:
    """The normalized rows of one node's properties (pure)."""
    return [
        {"node_id": node_id, "key": key,
         "text": constraints.as_text(value),
         "number": constraints.as_number(value)}
        for key, value in properties.items()
        if isinstance(key, str) and 0 < len(key) <= constraints.MAX_KEY
    ]


def _rewrite(connection: Connection, node: Node) -> None:
    connection.execute(
        delete(NodeProperty).where(NodeProperty.node_id == node.id))
    rows = rows_for(node.id, node.properties or {})
    if rows:
        connection.execute(insert(NodeProperty), rows)


@event.listens_for(Node, "after_insert")
def _inserted(_mapper: Mapper[Node], connection: Connection,
              node: Node) -> None:
    """A new node's rows, in the flush that inserts it."""
    rows = rows_for(node.id, node.properties or {})
    if rows:
        connection.execute(insert(NodeProperty), rows)


@event.listens_for(Node, "after_update")
def _updated(_mapper: Mapper[Node], connection: Connection,
             node: Node) -> None:
    """Rewrite the rows when the flush changed ``properties``."""
    history = inspect(node).attrs.properties.history
    if history.added or history.deleted:
        _rewrite(connection, node)
