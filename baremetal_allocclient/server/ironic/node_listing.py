"""``GET /v1/nodes``: its query parameters as SQL filters, and one page
of nodes (in the caller's session)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server.api import (
    listing,
    policy,
    schemas,
    versions,
)
from baremetal_allocclient.server.api.context import (
    Context,
)
from baremetal_allocclient.server.api.errors import (
    bad_request,
    not_acceptable,
    not_found,
)
from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.models import (
    Node,
)


def _filtered(ctx: Context, session: Session) -> Any:
    query = select(Node)
    visible = policy.node_filter(policy.principal(ctx))
    if visible is not None:
        query = query.where(visible)
    state = ctx.query("provision_state")
    if state is not None:
        if state not in ns.ALL_STATES:
            raise bad_request(f'Provision state "{state}" is not valid')
        query = query.where(Node.provision_state == state)
    for name, flag_column in (
        ("maintenance", Node.maintenance),
        ("retired", Node.retired),
    ):
        flag = listing.parse_bool(name, ctx.query(name))
        if flag is not None:
            query = query.where(flag_column.is_(flag))
    associated = listing.parse_bool("associated", ctx.query("associated"))
    if associated is not None:
        query = query.where(
            Node.instance_uuid.is_not(None)
            if associated
            else Node.instance_uuid.is_(None)
        )
    gated = (
        ("resource_class", Node.resource_class, versions.RESOURCE_CLASS),
        ("owner", Node.owner, versions.OWNER_FILTER),
        ("lessee", Node.lessee, versions.LESSEE),
        ("driver", Node.driver, 1),
        ("conductor_group", Node.conductor_group, 46),
        ("fault", Node.fault, 42),
        ("instance_uuid", Node.instance_uuid, 1),
    )
    for name, column, since in gated:
        value = ctx.query(name)
        if value is None:
            continue
        if ctx.minor < since:
            raise not_acceptable(
                "Request not acceptable. The minimal required API version "
                f"should be 1.{since}"
            )
        if name == "instance_uuid":
            value = schemas.canonical_uuid(value)
        query = query.where(column == value)
    return _newer_filters(ctx, query)


def _gate(ctx: Context, since: int, *values: object) -> None:
    """A filter newer than the request's version is a 406 (Ironic's
    wording)."""
    if ctx.minor < since and any(v is not None for v in values):
        raise not_acceptable(
            "Request not acceptable. The minimal required API version "
            f"should be 1.{since}")


def _newer_filters(ctx: Context, query: Any) -> Any:
    """``shard``/``sharded`` (1.82), ``parent_node``/``include_children``
    (1.83) and ``instance_name`` (1.104).  Child nodes are listed only
    when asked for, at every version, as in Ironic."""
    shard = ctx.query("shard")
    sharded = listing.parse_bool("sharded", ctx.query("sharded"))
    _gate(ctx, versions.SHARDS, shard, sharded)
    parent = ctx.query("parent_node")
    children = listing.parse_bool("include_children",
                                  ctx.query("include_children"))
    _gate(ctx, versions.PARENT_NODE, parent, children)
    instance_name = ctx.query("instance_name")
    if instance_name is not None and ctx.minor < versions.INSTANCE_NAME:
        raise not_acceptable(
            "instance_name is not acceptable in this API version")
    if shard is not None:
        query = query.where(Node.shard.in_(listing.split_list(shard)))
    if sharded is not None:
        query = query.where(Node.shard.is_not(None) if sharded
                            else Node.shard.is_(None))
    if instance_name is not None:
        query = query.where(Node.instance_name == instance_name)
    if not children:
        query = query.where(Node.parent_node == parent if parent is not None
                            else Node.parent_node.is_(None))
    return query


def page_of_nodes(ctx: Context, session: Session, page: listing.Page,
                  marker_ident: str | None) -> list[Node]:
    """The page of nodes the request's filters select, after the
    ``marker`` node (404 when it is missing or hidden)."""
    query = _filtered(ctx, session)
    marker = None
    if marker_ident is not None:
        marker_ident = schemas.canonical_uuid(marker_ident)
        marker_node = lookups.node_by_ident(
            session, marker_ident, schemas.is_uuid_like(marker_ident)
        )
        if marker_node is None or not policy.node_visible(
            policy.principal(ctx), marker_node.owner, marker_node.lessee
        ):
            raise not_found(f"Node {marker_ident} could not be found.")
        marker = (getattr(marker_node, page.sort_key), marker_node.id)
    query = listing.order_and_page(
        query, page, getattr(Node, page.sort_key), Node.id, marker
    )
    return list(session.scalars(query))
