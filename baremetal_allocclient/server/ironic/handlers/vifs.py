"""``/v1/nodes/{node}/vifs`` (API 1.28): virtual network interfaces.

Attached VIFs are stored per node (``node_vifs``) and listed; tearing the
node down (undeploy) or deleting it detaches them all, as Ironic's
``remove_vifs_from_node`` does.  Ironic's ``noop`` network interface,
which fake-hardware nodes report, stores nothing: there the list is
always empty, a second attach and the detach of an unknown VIF succeed.
Here they are a 409 and a 400 with the wording of Ironic's other network
interfaces (see ``doc/source/reference/api-compatibility.rst``).
"""

from __future__ import annotations

from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.api.context import (
    Context,
    empty_response,
    json_response,
    node_scope,
)
from baremetal_allocclient.server.api.errors import (
    bad_request,
    no_route,
)
from baremetal_allocclient.server.api.http import Response
from baremetal_allocclient.server.domain import identifiers
from baremetal_allocclient.server.ironic.service import vifs

#: The minor version that introduced the VIF sub-resource.
VIFS_SINCE = 28
#: From this version ``port_uuid`` or ``portgroup_uuid`` may name where
#: to attach (one of them at most).
ATTACH_PORT_SINCE = 67


def _gate(ctx: Context) -> None:
    if ctx.minor < VIFS_SINCE:
        raise no_route()


def check_vif_id(name: str, value: str) -> None:
    """A VIF id is a UUID or a name, like Ironic (pure)."""
    if not (identifiers.is_uuid_like(value)
            or identifiers.is_valid_name(value)):
        raise bad_request(f"Expected UUID or name for {name}: {value}")


def list_vifs(ctx: Context, ident: str) -> Response:
    """GET /v1/nodes/{ident}/vifs."""
    _gate(ctx)
    attached = vifs.attached(ctx.services.db, node_scope(ctx), ident)
    return json_response({"vifs": [{"id": vif} for vif in attached]})


def attach_vif(ctx: Context, ident: str) -> Response:
    """POST /v1/nodes/{ident}/vifs."""
    _gate(ctx)
    body = ctx.json_body()
    schemas.validate(body, schemas.VIF_ATTACH, "Schema error for vif")
    assert isinstance(body, dict)
    vif = body["id"]
    check_vif_id("id", vif)
    if ctx.minor >= ATTACH_PORT_SINCE and (
        "port_uuid" in body and "portgroup_uuid" in body
    ):
        raise bad_request("Cannot specify both port_uuid and portgroup_uuid")
    vifs.attach(ctx.services.db, node_scope(ctx), ident, vif)
    return empty_response(204)


def detach_vif(ctx: Context, ident: str, vif: str) -> Response:
    """DELETE /v1/nodes/{ident}/vifs/{vif}."""
    _gate(ctx)
    check_vif_id("vif_id", vif)
    vifs.detach(ctx.services.db, node_scope(ctx), ident, vif)
    return empty_response(204)
