"""``/v1/nodes``: what clients need to bring nodes to ``available``,
deploy them and tear them down (fake-hardware only)."""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Sequence
from typing import Any

from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.api import extensions, listing, versions
from baremetal_allocclient.server.api.context import (
    Context,
    empty_response,
    json_response,
    node_scope,
)
from baremetal_allocclient.server.api.errors import (
    bad_request,
    not_acceptable,
    not_found,
)
from baremetal_allocclient.server.api.http import Response
from baremetal_allocclient.server.db.models import (
    Node,
    utcnow,
)
from baremetal_allocclient.server.domain import identifiers
from baremetal_allocclient.server.domain.paging import Page
from baremetal_allocclient.server.ironic import (
    interfaces,
    node_changes,
    node_filters,
    node_rows,
    views,
)
from baremetal_allocclient.server.ironic.handlers.services import (
    ironic_services,
)
from baremetal_allocclient.server.ironic.service import nodes as service

_FIELD_SINCE = dict(views.NODE_FIELDS)
# -- helpers -------------------------------------------------------------
def _check_version_fields(ctx: Context, keys: Sequence[str]) -> None:
    """Fields newer than the request's version are a 406, like Ironic
    (``shard`` is also accepted below 1.82 with the constraints
    extension, see doc/source/howto/choosing-nodes.rst)."""
    for key in keys:
        if key == "shard" and extensions.constraints_requested(ctx):
            continue
        if ctx.minor < _FIELD_SINCE.get(key, 1):
            raise not_acceptable()


def _given_fields(body: dict[str, Any]) -> list[str]:
    """The fields of a create body that Ironic's version gate sees as
    given: any value but its empty one (``""`` for ``conductor_group``,
    ``null`` otherwise), so ``"boot_mode": null`` is fine below 1.75."""
    return [key for key, value in body.items()
            if value != ("" if key == "conductor_group" else None)]


def _render_many(
    ctx: Context,
    nodes: Sequence[Node],
    related: node_rows.Related,
    fields: Sequence[str] | None,
) -> list[dict[str, Any]]:
    conductor = ironic_services(ctx).conductor
    return [
        views.node_view(
            n,
            related.traits[n.id],
            related.allocation_uuids.get(n.allocation_id)
            if n.allocation_id else None,
            conductor,
            ctx.base_url,
            ctx.minor,
            fields,
        )
        for n in nodes
    ]


def _render(ctx: Context, node: Node, related: node_rows.Related
            ) -> dict[str, Any]:
    return _render_many(ctx, [node], related, None)[0]


def list_nodes(ctx: Context, detail: bool = False,
               chassis_uuid: str | None = None) -> Response:
    """GET /v1/nodes and /v1/nodes/detail (and the same of a chassis,
    ``chassis_uuid``: ``/v1/chassis/{uuid}/nodes``)."""
    fields = listing.parse_fields(ctx.query("fields"))
    if detail and fields is not None:
        raise bad_request("Can not specify ?fields when requesting detail")
    if not detail:
        as_detail = schemas.boolean("detail", ctx.query("detail"))
        if as_detail is not None and ctx.minor < versions.DETAIL_QUERY:
            raise not_acceptable()
        detail = bool(as_detail)
        if detail and fields is not None:
            raise bad_request("Can not specify ?detail=True and fields")
    views.check_node_fields(fields, ctx.minor)
    if fields is None and not detail:
        fields = [
            f for f in views.NODE_LIST_FIELDS if _FIELD_SINCE[f] <= ctx.minor
        ]
    page = Page(
        limit=listing.parse_limit(ctx.query("limit")),
        sort_key=listing.parse_sort_key(
            ctx.query("sort_key"), views.NODE_SORT_KEYS
        ),
        sort_dir=listing.parse_sort_dir(ctx.query("sort_dir")),
    )
    filters = node_filters.parse(ctx, ironic_services(ctx).conductor,
                                 chassis_uuid)
    nodes, related = service.list_page(
        ctx.services.db, node_scope(ctx), filters, page, ctx.query("marker"))
    items = _render_many(ctx, nodes, related, None if detail else fields)
    body: dict[str, Any] = {"nodes": items}
    resource = "nodes/detail" if detail and ctx.request.path.endswith(
        "/detail") else "nodes"
    if chassis_uuid is not None:
        resource = f"chassis/{chassis_uuid}/{resource}"
    link = listing.next_link(
        ctx.base_url, resource, dict(ctx.request.args), page, len(nodes),
        nodes[-1].uuid if nodes else None,
    )
    if link:
        body["next"] = link
    return json_response(body)


def _columns(ctx: Context, body: dict[str, Any], uuid: str,
             instance_uuid: str | None) -> dict[str, Any]:
    """A new node's stored fields from its checked body (but its
    parent, which the service resolves)."""
    return dict(
        uuid=uuid,
        name=body.get("name"),
        driver=node_changes.DRIVER,
        resource_class=body.get("resource_class"),
        provision_state=ns.initial_state(ctx.minor),
        maintenance=bool(body.get("maintenance")),
        owner=body.get("owner"),
        lessee=body.get("lessee"),
        description=body.get("description"),
        instance_uuid=instance_uuid,
        instance_info=body.get("instance_info") or {},
        properties=body.get("properties") or {},
        extra=body.get("extra") or {},
        driver_info=body.get("driver_info") or {},
        driver_internal_info={},
        network_data=body.get("network_data") or {},
        automated_clean=body.get("automated_clean"),
        protected=False,
        retired=bool(body.get("retired")),
        retired_reason=body.get("retired_reason"),
        conductor_group=(body.get("conductor_group") or "").lower(),
        shard=body.get("shard"),
        disable_power_off=bool(body.get("disable_power_off")),
        instance_name=body.get("instance_name"),
        console_enabled=bool(body.get("console_enabled")),
        boot_mode=body.get("boot_mode"),
        secure_boot=schemas.secure_boot_value(body.get("secure_boot")),
        **{field: body.get(field) for field in interfaces.INTERFACES},
        created_at=utcnow(),
    )


def create_node(ctx: Context) -> Response:
    """POST /v1/nodes: a fake-hardware node in ``enroll``."""
    body = ctx.json_body()
    if isinstance(body, dict):
        _check_version_fields(ctx, _given_fields(body))
    schemas.validate(body, schemas.node_create(ctx.version),
                     "Schema error for node")
    assert isinstance(body, dict)
    body = schemas.node_booleans(body)
    if body["driver"] != node_changes.DRIVER:
        raise node_changes.driver_error(body["driver"])
    node_changes.check_interfaces(body)
    name = body.get("name")
    if name is not None and not identifiers.is_valid_name(name):
        raise bad_request(f"Cannot create node with invalid name '{name}'")
    if name is not None and identifiers.is_uuid_like(name):
        raise bad_request(f"Cannot create node with invalid name '{name}'")
    uuid = body.get("uuid") or str(uuidlib.uuid4())
    if not identifiers.is_uuid(uuid):
        raise bad_request(f"Expected UUID for uuid: {uuid}")
    chassis_uuid = body.get("chassis_uuid")
    if chassis_uuid is not None and not identifiers.is_uuid_like(
            chassis_uuid):
        raise bad_request(f"Expected UUID for chassis_uuid: {chassis_uuid}")
    instance_uuid = body.get("instance_uuid")
    if instance_uuid is not None and not identifiers.is_uuid(instance_uuid):
        raise bad_request(f"Expected UUID for instance_uuid: {instance_uuid}")
    uuid = identifiers.canonical_uuid(uuid)
    if instance_uuid is not None:
        instance_uuid = identifiers.canonical_uuid(instance_uuid)
    node, related = service.create(
        ctx.services.db, _columns(ctx, body, uuid, instance_uuid),
        body.get("parent_node"), chassis_uuid)
    response = json_response(_render(ctx, node, related), 201)
    response.headers["Location"] = f"{ctx.base_url}/v1/nodes/{uuid}"
    return response


def get_node(ctx: Context, ident: str) -> Response:
    """GET /v1/nodes/{ident}."""
    fields = listing.parse_fields(ctx.query("fields"))
    views.check_node_fields(fields, ctx.minor)
    node, related = service.show(ctx.services.db, node_scope(ctx), ident)
    return json_response(_render_many(ctx, [node], related, fields)[0])


# -- update and delete ---------------------------------------------------
def _patch_schema(ctx: Context) -> dict[str, Any]:
    props = dict(schemas.node_create(ctx.version)["properties"])
    props.update(
        protected=schemas.FLEXIBLE_BOOLEAN,
        protected_reason={"type": ["string", "null"]},
    )
    return {"type": "object", "properties": props}


def update_node(ctx: Context, ident: str) -> Response:
    """PATCH /v1/nodes/{ident} (JSON patch)."""
    patch = ctx.json_body()
    schemas.validate(patch, schemas.JSON_PATCH)
    assert isinstance(patch, list)
    roots = []
    for op in patch:
        root = op["path"].lstrip("/").split("/")[0]
        if root not in node_changes.PATCHABLE:
            allowed = sorted(
                f for f in node_changes.PATCHABLE
                if _FIELD_SINCE.get(f, 1) <= ctx.minor
            )
            raise bad_request(
                f"Cannot patch {op['path']}. Only the following can be "
                f"updated: {', '.join(allowed)}"
            )
        roots.append(root)
        if (root == "chassis_uuid" and op["op"] == "remove"
                and ctx.minor < versions.REMOVE_CHASSIS):
            raise not_acceptable()
    _check_version_fields(ctx, roots)
    services = ironic_services(ctx)
    node, related = service.update(services.db, node_scope(ctx), ident,
                                   patch, _patch_schema(ctx),
                                   services.recorder)
    return json_response(_render(ctx, node, related))


def delete_node(ctx: Context, ident: str) -> Response:
    """DELETE /v1/nodes/{ident}; its allocation (maintenance), ports and
    VIFs go too."""
    services = ironic_services(ctx)
    service.delete(services.db, node_scope(ctx), ident, services.recorder)
    return empty_response(204)


# -- shards --------------------------------------------------------------
def list_shards(ctx: Context) -> Response:
    """GET /v1/shards (1.82): every shard with its node count, the
    largest first; nodes without a shard count as shard "None"."""
    if ctx.minor < versions.SHARDS:
        raise not_found("The API version does not allow shards")
    counted = service.shard_counts(ctx.services.db)
    return json_response(
        {"shards": [{"name": name, "count": count}
                    for count, name in counted]})
