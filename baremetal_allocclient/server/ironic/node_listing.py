"""``GET /v1/nodes``: its filters (parsed by
:mod:`~baremetal_allocclient.server.ironic.node_filters`) as SQL, and
one page of nodes, in the caller's session."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import false, select
from sqlalchemy.orm import Session

from baremetal_allocclient.server.db import lookups, node_lookup, paging
from baremetal_allocclient.server.db.models import Node
from baremetal_allocclient.server.domain import identifiers, policy
from baremetal_allocclient.server.domain.errors import NotFound
from baremetal_allocclient.server.domain.paging import Page
from baremetal_allocclient.server.domain.principal import Principal


@dataclass(frozen=True)
class NodeFilters:
    """What a node list selects (None: not filtered on)."""

    provision_state: str | None = None
    maintenance: bool | None = None
    retired: bool | None = None
    #: Whether the node has an ``instance_uuid``.
    associated: bool | None = None
    #: (column, value) pairs the nodes must equal.
    equal: Sequence[tuple[str, str]] = ()
    shards: Sequence[str] | None = None
    #: Whether the node has a shard.
    sharded: bool | None = None
    instance_name: str | None = None
    parent_node: str | None = None
    #: Child nodes are listed only when asked for (any version).
    include_children: bool = False
    #: The nodes of this chassis (a UUID).
    chassis_uuid: str | None = None
    #: False: the ``conductor`` filter names another conductor than the
    #: one every node shows; no node is listed.
    managed_here: bool = True


def _query(who: Principal, filters: NodeFilters) -> Any:
    query = select(Node)
    visible = node_lookup.node_filter(who)
    if visible is not None:
        query = query.where(visible)
    if not filters.managed_here:
        query = query.where(false())
    if filters.provision_state is not None:
        query = query.where(Node.provision_state == filters.provision_state)
    for flag, column in ((filters.maintenance, Node.maintenance),
                         (filters.retired, Node.retired)):
        if flag is not None:
            query = query.where(column.is_(flag))
    if filters.associated is not None:
        query = query.where(
            Node.instance_uuid.is_not(None) if filters.associated
            else Node.instance_uuid.is_(None))
    if filters.chassis_uuid is not None:
        query = query.where(Node.chassis_uuid == filters.chassis_uuid)
    for name, value in filters.equal:
        query = query.where(getattr(Node, name) == value)
    if filters.shards is not None:
        query = query.where(Node.shard.in_(filters.shards))
    if filters.sharded is not None:
        query = query.where(Node.shard.is_not(None) if filters.sharded
                            else Node.shard.is_(None))
    if filters.instance_name is not None:
        query = query.where(Node.instance_name == filters.instance_name)
    if not filters.include_children:
        parent = filters.parent_node
        query = query.where(Node.parent_node == parent if parent is not None
                            else Node.parent_node.is_(None))
    return query


def page_of_nodes(session: Session, who: Principal, filters: NodeFilters,
                  page: Page, marker_ident: str | None
                  ) -> list[Node]:
    """The page of the nodes ``who`` may see that ``filters`` select,
    after the ``marker`` node (404 when it is missing or hidden)."""
    query = _query(who, filters)
    marker = None
    if marker_ident is not None:
        marker_ident = identifiers.canonical_uuid(marker_ident)
        marker_node = lookups.node_by_ident(
            session, marker_ident, identifiers.is_uuid_like(marker_ident)
        )
        if marker_node is None or not policy.node_visible(
            who, marker_node.owner, marker_node.lessee
        ):
            raise NotFound(f"Node {marker_ident} could not be found.")
        marker = (getattr(marker_node, page.sort_key), marker_node.id)
    query = paging.order_and_page(
        query, page, getattr(Node, page.sort_key), Node.id, marker
    )
    return list(session.scalars(query))
