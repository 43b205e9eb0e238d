"""``/v1/ports`` and ``/v1/nodes/{node}/ports``: a node's NICs.

A port belongs to exactly one node and is known by its UUID or its MAC
address, which is unique (409 when taken).  Fields, defaults, checks and
error wording follow Ironic up to the served maximum version
(:mod:`~baremetal_allocclient.server.ironic.port_rules`); portgroups are
not served, so ``portgroup_uuid`` is always null.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Sequence
from typing import Any

from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.api import listing
from baremetal_allocclient.server.api.context import (
    Context,
    empty_response,
    json_response,
    node_scope,
)
from baremetal_allocclient.server.api.errors import (
    bad_request,
    not_acceptable,
)
from baremetal_allocclient.server.api.http import Response
from baremetal_allocclient.server.db.models import Port
from baremetal_allocclient.server.domain import identifiers
from baremetal_allocclient.server.domain.paging import Page
from baremetal_allocclient.server.ironic import port_rules, views
from baremetal_allocclient.server.ironic.service import ports as service


# -- rendering -------------------------------------------------------------
def _render(ctx: Context, port: Port, node_uuid: str,
            fields: Sequence[str] | None = None) -> dict[str, Any]:
    return views.port_view(port, node_uuid, ctx.base_url, ctx.minor, fields)


# -- collection ------------------------------------------------------------
def _list_fields(ctx: Context, detail: bool) -> list[str] | None:
    """The fields a list answers with; None for every field."""
    fields = listing.parse_fields(ctx.query("fields"))
    views.check_port_fields(fields, ctx.minor)
    return listing.answer_fields(fields, ctx.query("detail"), ctx.minor,
                                 detail, views.PORT_LIST_FIELDS)


def check_version_fields(values: dict[str, Any], minor: int) -> None:
    """Fields newer than the request's version are a 406, like Ironic."""
    if port_rules.newer_than_version(values, minor):
        raise not_acceptable()


def _page(ctx: Context) -> Page:
    return listing.parse_page(
        ctx.query, views.PORT_SORT_KEYS, views.PORT_UNSORTABLE,
        lambda key: views.port_field_since(key) > ctx.minor)


def list_ports(
    ctx: Context, detail: bool = False, ident: str | None = None
) -> Response:
    """GET /v1/ports[/detail] and /v1/nodes/{ident}/ports[/detail]."""
    fields = _list_fields(ctx, detail)
    page = _page(ctx)
    node_uuid = ctx.query("node_uuid")
    if node_uuid is not None and not identifiers.is_uuid_like(node_uuid):
        raise bad_request(f"Expected UUID for node_uuid: {node_uuid}")
    # Like Ironic: the sub-resource's node, else node_uuid, else node.
    node_ident = ident or node_uuid or ctx.query("node")
    asked = service.Listing(page=page, node=node_ident,
                            address=ctx.query("address"),
                            marker=ctx.query("marker"))
    rows = service.list_page(ctx.services.db, node_scope(ctx), asked)
    items = [_render(ctx, port, node_uuid, fields)
             for port, node_uuid in rows]
    body: dict[str, Any] = {"ports": items}
    resource = ctx.request.path.split("/v1/", 1)[1].rstrip("/")
    link = listing.next_link(
        ctx.base_url, resource, dict(ctx.request.args), page, len(rows),
        rows[-1][0].uuid if rows else None,
    )
    if link:
        body["next"] = link
    return json_response(body)


def list_node_ports(ctx: Context, ident: str) -> Response:
    """GET /v1/nodes/{ident}/ports."""
    return list_ports(ctx, ident=ident)


def list_node_ports_detail(ctx: Context, ident: str) -> Response:
    """GET /v1/nodes/{ident}/ports/detail."""
    return list_ports(ctx, detail=True, ident=ident)


def get_port(ctx: Context, ident: str) -> Response:
    """GET /v1/ports/{ident}."""
    fields = listing.parse_fields(ctx.query("fields"))
    views.check_port_fields(fields, ctx.minor)
    port, node_uuid = service.show(ctx.services.db, node_scope(ctx), ident)
    return json_response(_render(ctx, port, node_uuid, fields))


# -- create, update, delete ------------------------------------------------
def _validated_body(ctx: Context, body: object) -> dict[str, Any]:
    schemas.validate(body, schemas.PORT, "Schema error for port")
    assert isinstance(body, dict)
    check_version_fields(body, ctx.minor)
    return port_rules.normalized(body)


def create_port(ctx: Context) -> Response:
    """POST /v1/ports."""
    values = _validated_body(ctx, ctx.json_body())
    port_rules.check_no_portgroup(values)
    _check_smartnic(values)
    uuid = values.get("uuid") or str(uuidlib.uuid4())
    port, node_uuid = service.create(ctx.services.db, node_scope(ctx),
                                     values, uuid)
    response = json_response(_render(ctx, port, node_uuid), 201)
    response.headers["Location"] = f"{ctx.base_url}/v1/ports/{uuid}"
    return response


def _check_smartnic(values: dict[str, Any]) -> None:
    link = values.get("local_link_connection")
    if not values.get("is_smartnic") or link is None:
        return
    if "port_id" not in link or "hostname" not in link:
        raise bad_request("Smart NIC port must have port_id and hostname "
                          "in local_link_connection")


def _checked_patch(ctx: Context, patch: object) -> list[dict[str, Any]]:
    """A JSON patch of the fields a port's PATCH may name, at the
    request's version."""
    schemas.validate(patch, schemas.JSON_PATCH)
    assert isinstance(patch, list)
    roots = []
    for op in patch:
        root = op["path"].lstrip("/").split("/")[0]
        if root not in port_rules.PATCHABLE:
            raise bad_request(
                f"Cannot patch {op['path']}. Only the following can be "
                f"updated: {', '.join(port_rules.PATCHABLE)}")
        roots.append(root)
    check_version_fields(dict.fromkeys(roots), ctx.minor)
    return patch


def update_port(ctx: Context, ident: str) -> Response:
    """PATCH /v1/ports/{ident} (JSON patch)."""
    patch = _checked_patch(ctx, ctx.json_body())
    port, node_uuid = service.update(ctx.services.db, node_scope(ctx),
                                     ident, patch)
    return json_response(_render(ctx, port, node_uuid))


def delete_port(ctx: Context, ident: str) -> Response:
    """DELETE /v1/ports/{uuid}."""
    if not identifiers.is_uuid_like(ident):
        raise bad_request(f"Expected UUID for port_uuid: {ident}")
    service.delete(ctx.services.db, node_scope(ctx), ident)
    return empty_response(204)
