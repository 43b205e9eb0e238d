"""``/v1/nodes/{node}/traits``."""

from __future__ import annotations

from collections.abc import Sequence

from werkzeug.wrappers import Response

from baremetal_allocclient.server.api import (
    schemas,
    versions,
)
from baremetal_allocclient.server.api.context import (
    Context,
    empty_response,
    find_node,
    json_response,
)
from baremetal_allocclient.server.api.errors import (
    RouteError,
    bad_request,
    not_acceptable,
    not_found,
)
from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.models import (
    Node,
)
from baremetal_allocclient.server.ironic import node_rows

MAX_TRAITS = 50


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
    with ctx.services.db.read() as session:
        node = find_node(ctx, session, ident)
        if ctx.minor < versions.TRAITS:
            raise not_acceptable()
        traits = lookups.traits_of(session, [node.id])[node.id]
    return json_response({"traits": traits})


def _check_trait_count(node: Node, traits: Sequence[str]) -> None:
    if len(set(traits)) > MAX_TRAITS:
        raise bad_request(
            f"Could not add trait(s) to node {node.uuid}: a node can have "
            f"at most {MAX_TRAITS} traits"
        )


def set_traits(ctx: Context, ident: str) -> Response:
    """PUT /v1/nodes/{ident}/traits: replace all traits."""
    _traits_gate(ctx, "PUT")
    body = ctx.json_body()
    schemas.validate(body, schemas.TRAITS_SET, "Schema error for body")
    assert isinstance(body, dict)
    with ctx.services.db.write() as session:
        node = find_node(ctx, session, ident)
        _check_trait_count(node, body["traits"])
        lookups.replace_traits(session, node.id, body["traits"])
        lookups.touch_node(session, node.id)
    return empty_response(204)


def add_trait(ctx: Context, ident: str, trait: str) -> Response:
    """PUT /v1/nodes/{ident}/traits/{trait}."""
    _traits_gate(ctx, "PUT")
    schemas.validate(trait, schemas.TRAIT, "Schema error for trait")
    with ctx.services.db.write() as session:
        node = find_node(ctx, session, ident)
        current = lookups.traits_of(session, [node.id])[node.id]
        if trait not in current:
            _check_trait_count(node, [*current, trait])
            node_rows.add_trait(session, node.id, trait)
            lookups.touch_node(session, node.id)
    return empty_response(204)


def remove_trait(ctx: Context, ident: str, trait: str) -> Response:
    """DELETE /v1/nodes/{ident}/traits/{trait}."""
    _traits_gate(ctx, "DELETE")
    with ctx.services.db.write() as session:
        node = find_node(ctx, session, ident)
        if not node_rows.remove_trait(session, node.id, trait):
            raise not_found(
                f"Node {node.uuid} doesn't have a trait '{trait}'"
            )
        lookups.touch_node(session, node.id)
    return empty_response(204)


def remove_traits(ctx: Context, ident: str) -> Response:
    """DELETE /v1/nodes/{ident}/traits: remove all traits."""
    _traits_gate(ctx, "DELETE")
    with ctx.services.db.write() as session:
        node = find_node(ctx, session, ident)
        lookups.replace_traits(session, node.id, [])
        lookups.touch_node(session, node.id)
    return empty_response(204)
