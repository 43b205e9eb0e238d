"""``/v1/nodes/{node}/traits``."""

from __future__ import annotations

from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.api import versions
from baremetal_allocclient.server.api.context import (
    Context,
    empty_response,
    json_response,
    node_scope,
)
from baremetal_allocclient.server.api.errors import (
    RouteError,
    not_acceptable,
    not_found,
)
from baremetal_allocclient.server.api.http import Response
from baremetal_allocclient.server.ironic.service import traits


def _traits_gate(ctx: Context, method: str) -> None:
    """Below 1.37 Ironic routes ``/traits`` to the node itself: a PUT is
    a 405, a DELETE its bare "Resource could not be found." (the GET, see
    get_traits)."""
    if ctx.minor >= versions.TRAITS:
        return
    if method == "PUT":
        raise RouteError(405, "Method Not Allowed")
    raise not_found("Resource could not be found.")


def get_traits(ctx: Context, ident: str) -> Response:
    """GET /v1/nodes/{ident}/traits; below 1.37 Ironic reads ``traits``
    as a field list of the node: an unknown node is its usual 404, a
    known one a 406 (no ``traits`` field yet)."""
    found = traits.of_node(ctx.services.db, node_scope(ctx), ident)
    if ctx.minor < versions.TRAITS:
        raise not_acceptable()
    return json_response({"traits": found})


def set_traits(ctx: Context, ident: str) -> Response:
    """PUT /v1/nodes/{ident}/traits: replace all traits."""
    _traits_gate(ctx, "PUT")
    body = ctx.json_body()
    schemas.validate(body, schemas.TRAITS_SET, "Schema error for body")
    assert isinstance(body, dict)
    traits.replace(ctx.services.db, node_scope(ctx), ident, body["traits"])
    return empty_response(204)


def add_trait(ctx: Context, ident: str, trait: str) -> Response:
    """PUT /v1/nodes/{ident}/traits/{trait}."""
    _traits_gate(ctx, "PUT")
    schemas.validate(trait, schemas.TRAIT, "Schema error for trait")
    traits.add(ctx.services.db, node_scope(ctx), ident, trait)
    return empty_response(204)


def remove_trait(ctx: Context, ident: str, trait: str) -> Response:
    """DELETE /v1/nodes/{ident}/traits/{trait}."""
    _traits_gate(ctx, "DELETE")
    traits.remove(ctx.services.db, node_scope(ctx), ident, trait)
    return empty_response(204)


def remove_traits(ctx: Context, ident: str) -> Response:
    """DELETE /v1/nodes/{ident}/traits: remove all traits."""
    _traits_gate(ctx, "DELETE")
    traits.remove_all(ctx.services.db, node_scope(ctx), ident)
    return empty_response(204)
