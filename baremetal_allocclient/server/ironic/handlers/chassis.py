"""``/v1/chassis``: Ironic's chassis (API 1.0), a description and
``extra`` that nodes name in ``chassis_uuid``; their nodes are listed at
``/v1/chassis/{uuid}/nodes``.

Like Ironic, only system-scoped principals use them: project members
are refused before the handlers (``api/auth.py``).
"""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.api import listing
from baremetal_allocclient.server.api.context import (
    Context,
    empty_response,
    json_response,
)
from baremetal_allocclient.server.api.errors import (
    bad_request,
)
from baremetal_allocclient.server.api.http import Response
from baremetal_allocclient.server.domain import identifiers
from baremetal_allocclient.server.domain.paging import Page
from baremetal_allocclient.server.ironic import views
from baremetal_allocclient.server.ironic.handlers import nodes
from baremetal_allocclient.server.ironic.service import chassis as service


def _uuid(ident: str, name: str = "chassis_uuid") -> str:
    """A path's or parameter's chassis UUID; anything else is Ironic's
    400."""
    if not identifiers.is_uuid_like(ident):
        raise bad_request(f"Expected UUID for {name}: {ident}")
    return identifiers.canonical_uuid(ident)


# -- collection ------------------------------------------------------------
def _list_fields(ctx: Context, detail: bool) -> list[str] | None:
    """The fields a list answers with; None for every field."""
    fields = listing.parse_fields(ctx.query("fields"))
    views.check_chassis_fields(fields, ctx.minor)
    return listing.answer_fields(fields, ctx.query("detail"), ctx.minor,
                                 detail, views.CHASSIS_LIST_FIELDS)


def _page(ctx: Context) -> Page:
    return listing.parse_page(ctx.query, views.CHASSIS_SORT_KEYS,
                              views.CHASSIS_UNSORTABLE)


def list_chassis(ctx: Context, detail: bool = False) -> Response:
    """GET /v1/chassis[/detail]."""
    fields = _list_fields(ctx, detail)
    page = _page(ctx)
    marker = ctx.query("marker")
    if marker is not None:
        marker = _uuid(marker, "marker")
    rows = service.list_page(ctx.services.db, page, marker)
    body: dict[str, Any] = {"chassis": [
        views.chassis_view(chassis, ctx.base_url, fields)
        for chassis in rows]}
    link = listing.next_link(
        ctx.base_url, "chassis/detail" if detail else "chassis",
        dict(ctx.request.args), page, len(rows),
        rows[-1].uuid if rows else None)
    if link:
        body["next"] = link
    return json_response(body)


def list_chassis_detail(ctx: Context) -> Response:
    """GET /v1/chassis/detail."""
    return list_chassis(ctx, detail=True)


def get_chassis(ctx: Context, ident: str) -> Response:
    """GET /v1/chassis/{uuid}."""
    fields = listing.parse_fields(ctx.query("fields"))
    views.check_chassis_fields(fields, ctx.minor)
    chassis = service.show(ctx.services.db, _uuid(ident))
    return json_response(views.chassis_view(chassis, ctx.base_url, fields))


def list_chassis_nodes(ctx: Context, ident: str) -> Response:
    """GET /v1/chassis/{uuid}/nodes: the nodes that name the chassis."""
    return nodes.list_nodes(ctx, chassis_uuid=_uuid(ident))


def list_chassis_nodes_detail(ctx: Context, ident: str) -> Response:
    """GET /v1/chassis/{uuid}/nodes/detail."""
    return nodes.list_nodes(ctx, detail=True, chassis_uuid=_uuid(ident))


# -- create, update, delete ------------------------------------------------
def create_chassis(ctx: Context) -> Response:
    """POST /v1/chassis."""
    body = ctx.json_body()
    schemas.validate(body, schemas.CHASSIS, "Schema error for chassis")
    assert isinstance(body, dict)
    uuid = _uuid(body["uuid"], "uuid") if body.get("uuid") else str(
        uuidlib.uuid4())
    chassis = service.create(ctx.services.db, body, uuid)
    response = json_response(views.chassis_view(chassis, ctx.base_url), 201)
    response.headers["Location"] = f"{ctx.base_url}/v1/chassis/{uuid}"
    return response


def update_chassis(ctx: Context, ident: str) -> Response:
    """PATCH /v1/chassis/{uuid} (JSON patch of the description and
    ``extra``)."""
    patch = ctx.json_body()
    schemas.validate(patch, schemas.JSON_PATCH)
    assert isinstance(patch, list)
    for op in patch:
        root = op["path"].lstrip("/").split("/")[0]
        if root not in service.FIELDS:
            raise bad_request(
                f"Cannot patch {op['path']}. Only the following can be "
                f"updated: {', '.join(service.FIELDS)}")
    chassis = service.update(ctx.services.db, _uuid(ident), patch)
    return json_response(views.chassis_view(chassis, ctx.base_url))


def delete_chassis(ctx: Context, ident: str) -> Response:
    """DELETE /v1/chassis/{uuid}: only one no node names (else 400)."""
    service.delete(ctx.services.db, _uuid(ident))
    return empty_response(204)
