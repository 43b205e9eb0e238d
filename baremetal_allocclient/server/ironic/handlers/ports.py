"""``/v1/ports`` and ``/v1/nodes/{node}/ports``: a node's NICs.

A port belongs to exactly one node and is known by its UUID or its MAC
address, which is unique (409 when taken).  Fields, defaults, checks and
error wording follow Ironic up to the served maximum version; portgroups
are not served, so ``portgroup_uuid`` is always null.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Sequence
from typing import Any

import jsonpatch
from werkzeug.wrappers import Response

from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server.api import listing, schemas, views
from baremetal_allocclient.server.api.context import (
    Context,
    empty_response,
    json_response,
)
from baremetal_allocclient.server.api.errors import (
    ApiError,
    bad_request,
    conflict,
    not_acceptable,
)
from baremetal_allocclient.server.db.engine import duplicates_refused
from baremetal_allocclient.server.db.models import Node, Port, utcnow
from baremetal_allocclient.server.ironic import port_rows

#: What a PATCH may name (Ironic's list, whatever the version).
PATCHABLE = (
    "address", "extra", "is_smartnic", "local_link_connection",
    "node_ident", "node_uuid", "physical_network", "portgroup_uuid",
    "pxe_enabled", "name", "description", "vendor", "category",
    "available_for_dynamic_portgroup",
)
#: Changing these needs the node in one of CONNECTIVITY_STATES or in
#: maintenance (Ironic's conductor rule).
CONNECTIVITY = ("local_link_connection", "physical_network", "portgroup_id",
                "pxe_enabled")
CONNECTIVITY_STATES = (ns.ENROLL, ns.INSPECTING, ns.INSPECT_WAIT,
                       ns.MANAGEABLE)
#: ``node_ident`` in a body: a node name or UUID, from 1.94.
NODE_IDENT_SINCE = 94
NETWORK_TYPE_SINCE = 64
_DEFAULTS: dict[str, Any] = {
    "extra": {}, "local_link_connection": {}, "pxe_enabled": True,
    "is_smartnic": False, "physical_network": None, "name": None,
    "description": None, "vendor": None, "category": None,
    "available_for_dynamic_portgroup": True,
}


# -- validation (pure) -----------------------------------------------------
def check_version_fields(values: dict[str, Any], minor: int) -> None:
    """Fields newer than the request's version are a 406, like Ironic."""
    if any(views.port_field_since(k) > minor for k in values):
        raise not_acceptable()
    if "node_ident" in values and minor < NODE_IDENT_SINCE:
        raise not_acceptable()
    link = values.get("local_link_connection")
    if isinstance(link, dict) and "network_type" in link and (
        minor < NETWORK_TYPE_SINCE
    ):
        raise not_acceptable()


def _boolean(name: str, value: object) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    return listing.parse_bool(name, str(value))


def normalized(values: dict[str, Any]) -> dict[str, Any]:
    """A port body checked field by field as Ironic does after its schema
    (MAC address, UUIDs, booleans, local link), with normalised values."""
    result = dict(values)
    address = schemas.normalize_mac(values["address"])
    if address is None:
        raise bad_request(
            f"Expected valid MAC address for address: {values['address']}")
    result["address"] = address
    for key in ("uuid", "node_uuid", "portgroup_uuid"):
        value = values.get(key)
        if value is not None and not schemas.is_uuid_like(value):
            raise bad_request(f"Expected UUID for {key}: {value}")
        if value is not None:
            result[key] = schemas.canonical_uuid(value)
    for key in ("pxe_enabled", "is_smartnic"):
        if key in values:
            result[key] = _boolean(key, values[key])
    link = values.get("local_link_connection")
    if link is not None:
        schemas.validate(link, schemas.LOCAL_LINK,
                         "Schema error for local_link_connection")
    if result.get("physical_network") == "":
        raise bad_request("A non-empty value is required when setting "
                          "physical_network")
    return result


# -- rendering -------------------------------------------------------------
def _render(ctx: Context, port: Port, node_uuid: str,
            fields: Sequence[str] | None = None) -> dict[str, Any]:
    return views.port_view(port, node_uuid, ctx.base_url, ctx.minor, fields)


# -- collection ------------------------------------------------------------
def _list_fields(ctx: Context, detail: bool) -> list[str] | None:
    """The fields a list answers with; None for every field."""
    fields = listing.parse_fields(ctx.query("fields"))
    views.check_port_fields(fields, ctx.minor)
    if detail:
        return None
    as_detail = listing.parse_bool("detail", ctx.query("detail"))
    if as_detail is not None and ctx.minor < 43:
        raise not_acceptable()
    if as_detail and fields is not None:
        raise bad_request("Can not specify ?detail=True and fields")
    if as_detail:
        return None
    return fields if fields is not None else list(views.PORT_LIST_FIELDS)


def _page(ctx: Context) -> listing.Page:
    sort_key = ctx.query("sort_key")
    if sort_key in views.PORT_UNSORTABLE:
        raise bad_request(f"The sort_key value {sort_key} is an invalid "
                          f"field for sorting")
    if sort_key is not None and views.port_field_since(sort_key) > (
        ctx.minor
    ):
        raise not_acceptable()
    return listing.Page(
        limit=listing.parse_limit(ctx.query("limit")),
        sort_key=listing.parse_sort_key(sort_key, views.PORT_SORT_KEYS),
        sort_dir=listing.parse_sort_dir(ctx.query("sort_dir")),
    )


def list_ports(
    ctx: Context, detail: bool = False, ident: str | None = None
) -> Response:
    """GET /v1/ports[/detail] and /v1/nodes/{ident}/ports[/detail]."""
    fields = _list_fields(ctx, detail)
    page = _page(ctx)
    node_uuid = ctx.query("node_uuid")
    if node_uuid is not None and not schemas.is_uuid_like(node_uuid):
        raise bad_request(f"Expected UUID for node_uuid: {node_uuid}")
    # Like Ironic: the sub-resource's node, else node_uuid, else node.
    node_ident = ident or node_uuid or ctx.query("node")
    with ctx.services.db.read() as session:
        rows = port_rows.page_of_ports(ctx, session, node_ident, page)
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
    with ctx.services.db.read() as session:
        port, node = port_rows.find_port(ctx, session, ident)
        return json_response(_render(ctx, port, node.uuid, fields))


# -- create, update, delete ------------------------------------------------
def _validated_body(ctx: Context, body: object) -> dict[str, Any]:
    schemas.validate(body, schemas.PORT, "Schema error for port")
    assert isinstance(body, dict)
    check_version_fields(body, ctx.minor)
    return normalized(body)


def create_port(ctx: Context) -> Response:
    """POST /v1/ports."""
    values = _validated_body(ctx, ctx.json_body())
    if values.get("portgroup_uuid") is not None:
        raise bad_request(
            f"Portgroup {values['portgroup_uuid']} could not be found.")
    _check_smartnic(values)
    uuid = values.get("uuid") or str(uuidlib.uuid4())
    now = utcnow()
    def duplicate() -> ApiError:  # a race lost to another create
        return conflict(
            f"A port with MAC address {values['address']} or UUID {uuid} "
            f"already exists.")

    with duplicates_refused(duplicate), ctx.services.db.write() as session:
        node = port_rows.node_for_port(
            ctx, session, values.get("node_uuid") or values["node_ident"])
        port_rows.check_unique(session, values["address"], uuid, None)
        port = Port(
            uuid=uuid, address=values["address"], node_id=node.id,
            internal_info={}, created_at=now,
            **{k: _value(values, k) for k in _DEFAULTS},
        )
        port_rows.add_port(session, port)
        result = _render(ctx, port, node.uuid)
    response = json_response(result, 201)
    response.headers["Location"] = f"{ctx.base_url}/v1/ports/{uuid}"
    return response


def _value(values: dict[str, Any], key: str) -> Any:
    value = values.get(key)
    return _DEFAULTS[key] if value is None else value


def _check_smartnic(values: dict[str, Any]) -> None:
    link = values.get("local_link_connection")
    if not values.get("is_smartnic") or link is None:
        return
    if "port_id" not in link or "hostname" not in link:
        raise bad_request("Smart NIC port must have port_id and hostname "
                          "in local_link_connection")


def _patchable(port: Port, node: Node) -> dict[str, Any]:
    return {
        "address": port.address, "extra": dict(port.extra or {}),
        "is_smartnic": port.is_smartnic,
        "local_link_connection": dict(port.local_link_connection or {}),
        "node_uuid": node.uuid, "physical_network": port.physical_network,
        "portgroup_uuid": None, "pxe_enabled": port.pxe_enabled,
        "name": port.name, "description": port.description,
        "vendor": port.vendor, "category": port.category,
        "available_for_dynamic_portgroup":
            port.available_for_dynamic_portgroup,
    }


def _apply_patch(ctx: Context, patch: object) -> list[dict[str, Any]]:
    schemas.validate(patch, schemas.JSON_PATCH)
    assert isinstance(patch, list)
    roots = []
    for op in patch:
        root = op["path"].lstrip("/").split("/")[0]
        if root not in PATCHABLE:
            raise bad_request(
                f"Cannot patch {op['path']}. Only the following can be "
                f"updated: {', '.join(PATCHABLE)}")
        roots.append(root)
    check_version_fields(dict.fromkeys(roots), ctx.minor)
    return patch


def update_port(ctx: Context, ident: str) -> Response:
    """PATCH /v1/ports/{ident} (JSON patch)."""
    patch = _apply_patch(ctx, ctx.json_body())
    with ctx.services.db.write() as session:
        port, node = port_rows.find_port(ctx, session, ident)
        before = _patchable(port, node)
        try:
            after = jsonpatch.apply_patch(before, patch)
        except (jsonpatch.JsonPatchException,
                jsonpatch.JsonPointerException) as exc:
            raise bad_request(f"Invalid patch: {exc}") from None
        if not isinstance(after, dict):
            raise bad_request("Invalid patch: the port must stay an object")
        after = {k: v for k, v in after.items() if v is not None}
        after.setdefault("node_uuid", node.uuid)  # removing it: no change
        # Only the patched fields were checked against the version.
        schemas.validate(after, schemas.PORT, "Schema error for patch")
        after = normalized(after)
        if after.get("portgroup_uuid") is not None:
            raise bad_request(
                f"Portgroup {after['portgroup_uuid']} could not be found.")
        target = node
        if after["node_uuid"] != node.uuid:
            target = port_rows.patched_node(ctx, session, after["node_uuid"])
        changed = {k for k in _DEFAULTS if _value(after, k) != before[k]}
        if after["address"] != port.address:
            changed.add("address")
        check_update_allowed(port, target, changed)
        if "address" in changed:
            port_rows.check_unique(session, after["address"], None, port.id)
            port.address = after["address"]
        for key in changed - {"address"}:
            setattr(port, key, _value(after, key))
        port.node_id = target.id
        port.updated_at = utcnow()
        session.flush()
        result = _render(ctx, port, target.uuid)
    return json_response(result)


def check_update_allowed(port: Port, node: Node, changed: set[str]) -> None:
    """Ironic's conductor rules for changing a port of this node."""
    if node.provision_state == ns.INSPECTING:
        raise conflict(f'Cannot update port "{port.uuid}" on "{node.uuid}" '
                       f'while it is in state "{ns.INSPECTING}".')
    if node.maintenance:
        return
    if "address" in changed and (
        node.provision_state == ns.ACTIVE or node.instance_uuid
    ):
        raise conflict(
            f"Cannot update hardware address for port {port.uuid} as node "
            f"{node.uuid} is active or has instance UUID assigned")
    if changed & set(CONNECTIVITY) and (
        node.provision_state not in CONNECTIVITY_STATES
    ):
        raise conflict(
            f"Port {port.uuid} can not have any connectivity attributes "
            f"({', '.join(CONNECTIVITY)}) updated unless node {node.uuid} "
            f"is in a {', '.join(CONNECTIVITY_STATES)} state or in "
            f"maintenance mode. The current state is "
            f"{node.provision_state}.")


def delete_port(ctx: Context, ident: str) -> Response:
    """DELETE /v1/ports/{uuid}."""
    if not schemas.is_uuid_like(ident):
        raise bad_request(f"Expected UUID for port_uuid: {ident}")
    with ctx.services.db.write() as session:
        port, _node = port_rows.find_port(ctx, session, ident)
        port_rows.delete_port(session, port)
    return empty_response(204)
