"""``/v1/nodes``: what clients need to bring nodes to ``available``,
deploy them and tear them down (fake-hardware only)."""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Sequence
from typing import Any

import jsonpatch
from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from werkzeug.wrappers import Response

from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server.allocation.service import releasing
from baremetal_allocclient.server.api import (
    extensions,
    listing,
    policy,
    schemas,
    versions,
    views,
)
from baremetal_allocclient.server.api.context import (
    Context,
    empty_response,
    find_node,
    json_response,
)
from baremetal_allocclient.server.api.errors import (
    ApiError,
    bad_request,
    conflict,
    not_acceptable,
    not_found,
)
from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.models import (
    Allocation,
    Node,
    NodeTrait,
    NodeVif,
    Port,
    utcnow,
)
from baremetal_allocclient.server.ironic import (
    interfaces,
)

DRIVER = "fake-hardware"
_FIELD_SINCE = dict(views.NODE_FIELDS)
_PATCHABLE = (
    "automated_clean", "bios_interface", "boot_interface", "chassis_uuid",
    "conductor_group", "console_interface", "deploy_interface",
    "description", "disable_power_off", "driver", "driver_info", "extra",
    "firmware_interface", "inspect_interface", "instance_info",
    "instance_name", "instance_uuid", "lessee", "maintenance",
    "management_interface", "name", "network_data", "network_interface",
    "owner", "parent_node", "power_interface", "properties", "protected",
    "protected_reason", "raid_interface", "rescue_interface",
    "resource_class", "retired", "retired_reason", "shard",
    "storage_interface", "vendor_interface",
)


# -- helpers -------------------------------------------------------------
def _driver_error(driver: str) -> ApiError:
    return bad_request(
        f"No valid host was found. Reason: No conductor service registered "
        f'which supports driver {driver} for conductor group "". Ensure '
        f"the driver is valid and enabled."
    )


def _check_interfaces(values: dict[str, Any]) -> None:
    for field in interfaces.INTERFACES:
        message = interfaces.invalid_value(field, values.get(field))
        if message is not None:
            raise bad_request(message)


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


def _parent_uuid(session: Session, node_owner: str | None,
                 ident: str | None) -> str | None:
    """The UUID of the parent named by ``ident`` (a UUID or a name); an
    unknown node or one of another owner is the same 400, like Ironic,
    so that the answer does not tell whether the node exists."""
    if ident is None:
        return None
    parent = lookups.node_by_ident(
        session, schemas.canonical_uuid(ident), schemas.is_uuid_like(ident),
        lock=False)
    if parent is None or parent.owner != node_owner:
        raise bad_request(
            f"Unable to apply the requested parent_node '{ident}'. "
            f"Requested value was invalid.")
    return parent.uuid


def _render_many(
    ctx: Context,
    session: Session,
    nodes: Sequence[Node],
    fields: Sequence[str] | None,
) -> list[dict[str, Any]]:
    ids = [n.id for n in nodes]
    traits = lookups.traits_of(session, ids)
    alloc_ids = [n.allocation_id for n in nodes if n.allocation_id]
    alloc_uuids: dict[int, str] = {}
    if alloc_ids:
        rows = session.execute(
            select(Allocation.id, Allocation.uuid).where(
                Allocation.id.in_(alloc_ids)
            )
        )
        alloc_uuids = {int(aid): str(auuid) for aid, auuid in rows}
    return [
        views.node_view(
            n,
            traits[n.id],
            alloc_uuids.get(n.allocation_id) if n.allocation_id else None,
            ctx.services.conductor,
            ctx.base_url,
            ctx.minor,
            fields,
        )
        for n in nodes
    ]


def _render(ctx: Context, session: Session, node: Node) -> dict[str, Any]:
    return _render_many(ctx, session, [node], None)[0]


# -- collection ----------------------------------------------------------
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


def list_nodes(ctx: Context, detail: bool = False) -> Response:
    """GET /v1/nodes and /v1/nodes/detail."""
    fields = listing.parse_fields(ctx.query("fields"))
    if detail and fields is not None:
        raise bad_request("Can not specify ?fields when requesting detail")
    if not detail:
        as_detail = listing.parse_bool("detail", ctx.query("detail"))
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
    page = listing.Page(
        limit=listing.parse_limit(ctx.query("limit")),
        sort_key=listing.parse_sort_key(
            ctx.query("sort_key"), views.NODE_SORT_KEYS
        ),
        sort_dir=listing.parse_sort_dir(ctx.query("sort_dir")),
    )
    marker_ident = ctx.query("marker")
    with ctx.services.db.read() as session:
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
        nodes: list[Node] = list(session.scalars(query))
        items = _render_many(ctx, session, nodes, None if detail else fields)
    body: dict[str, Any] = {"nodes": items}
    resource = "nodes/detail" if detail and ctx.request.path.endswith(
        "/detail") else "nodes"
    link = listing.next_link(
        ctx.base_url, resource, dict(ctx.request.args), page, len(nodes),
        nodes[-1].uuid if nodes else None,
    )
    if link:
        body["next"] = link
    return json_response(body)


def create_node(ctx: Context) -> Response:
    """POST /v1/nodes: a fake-hardware node in ``enroll``."""
    body = ctx.json_body()
    if isinstance(body, dict):
        _check_version_fields(ctx, _given_fields(body))
    schemas.validate(body, schemas.node_create(ctx.version),
                     "Schema error for node")
    assert isinstance(body, dict)
    body = schemas.node_booleans(body)
    if body["driver"] != DRIVER:
        raise _driver_error(body["driver"])
    _check_interfaces(body)
    name = body.get("name")
    if name is not None and not schemas.is_valid_name(name):
        raise bad_request(f"Cannot create node with invalid name '{name}'")
    if name is not None and schemas.is_uuid_like(name):
        raise bad_request(f"Cannot create node with invalid name '{name}'")
    uuid = body.get("uuid") or str(uuidlib.uuid4())
    if not schemas.is_uuid(uuid):
        raise bad_request(f"Expected UUID for uuid: {uuid}")
    instance_uuid = body.get("instance_uuid")
    if instance_uuid is not None and not schemas.is_uuid(instance_uuid):
        raise bad_request(f"Expected UUID for instance_uuid: {instance_uuid}")
    uuid = schemas.canonical_uuid(uuid)
    if instance_uuid is not None:
        instance_uuid = schemas.canonical_uuid(instance_uuid)
    now = utcnow()
    try:
        with ctx.services.db.write() as session:
            if lookups.node_by_ident(session, uuid, True, lock=False):
                raise conflict(f"A node with UUID {uuid} already exists.")
            if name is not None and lookups.node_by_ident(
                session, name, False, lock=False
            ):
                raise conflict(f"A node with name {name} already exists.")
            parent = _parent_uuid(session, body.get("owner"),
                                  body.get("parent_node"))
            node = Node(
                uuid=uuid,
                name=name,
                driver=DRIVER,
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
                parent_node=parent,
                disable_power_off=bool(body.get("disable_power_off")),
                instance_name=body.get("instance_name"),
                console_enabled=bool(body.get("console_enabled")),
                boot_mode=body.get("boot_mode"),
                secure_boot=schemas.secure_boot_value(
                    body.get("secure_boot")),
                **{field: body.get(field) for field in interfaces.INTERFACES},
                created_at=now,
            )
            session.add(node)
            session.flush()
            result = _render(ctx, session, node)
    except IntegrityError:
        raise conflict(
            f"A node with UUID {uuid}, name {name} or instance "
            f"{instance_uuid} already exists."
        ) from None
    response = json_response(result, 201)
    response.headers["Location"] = f"{ctx.base_url}/v1/nodes/{uuid}"
    return response


def get_node(ctx: Context, ident: str) -> Response:
    """GET /v1/nodes/{ident}."""
    fields = listing.parse_fields(ctx.query("fields"))
    views.check_node_fields(fields, ctx.minor)
    with ctx.services.db.read() as session:
        node = find_node(ctx, session, ident)
        return json_response(_render_many(ctx, session, [node], fields)[0])


# -- update and delete ---------------------------------------------------
def _patch_schema(ctx: Context) -> dict[str, Any]:
    props = dict(schemas.node_create(ctx.version)["properties"])
    props.update(
        protected=schemas.FLEXIBLE_BOOLEAN,
        protected_reason={"type": ["string", "null"]},
    )
    return {"type": "object", "properties": props}


def _patchable(node: Node) -> dict[str, Any]:
    values: dict[str, Any] = {
        name: getattr(node, name, None)
        for name in _PATCHABLE
        if name not in interfaces.INTERFACES and name != "chassis_uuid"
    }
    for field in interfaces.INTERFACES:
        values[field] = interfaces.value_of(node, field)
    values["chassis_uuid"] = None
    for key in ("driver_info", "extra", "instance_info", "network_data",
                "properties"):
        values[key] = dict(values[key] or {})
    return values


_DICT_FIELDS = (
    "driver_info", "extra", "instance_info", "network_data", "properties",
)
_BOOL_DEFAULTS = {"maintenance": False, "protected": False, "retired": False,
                  "disable_power_off": False}


def _with_defaults(after: dict[str, Any]) -> dict[str, Any]:
    """A removed field goes back to its default, like in Ironic."""
    result: dict[str, Any] = {}
    for key in _PATCHABLE:
        value = after.get(key)
        if value is None and key in _DICT_FIELDS:
            value = {}
        elif value is None and key in _BOOL_DEFAULTS:
            value = _BOOL_DEFAULTS[key]
        elif key == "conductor_group":
            # Case-insensitive, stored lower-case (as Ironic does).
            value = value.lower() if isinstance(value, str) else (
                "" if value is None else value)
        elif value is None and key in interfaces.INTERFACES:
            value = interfaces.INTERFACES[key].default
        result[key] = value
    return result


def update_node(ctx: Context, ident: str) -> Response:
    """PATCH /v1/nodes/{ident} (JSON patch)."""
    patch = ctx.json_body()
    schemas.validate(patch, schemas.JSON_PATCH)
    assert isinstance(patch, list)
    roots = []
    for op in patch:
        root = op["path"].lstrip("/").split("/")[0]
        if root not in _PATCHABLE:
            allowed = sorted(
                f for f in _PATCHABLE if _FIELD_SINCE.get(f, 1) <= ctx.minor
            )
            raise bad_request(
                f"Cannot patch {op['path']}. Only the following can be "
                f"updated: {', '.join(allowed)}"
            )
        roots.append(root)
    _check_version_fields(ctx, roots)
    with ctx.services.db.write() as session:
        node = find_node(ctx, session, ident)
        before = _patchable(node)
        try:
            after = jsonpatch.apply_patch(before, patch)
        except (jsonpatch.JsonPatchException,
                jsonpatch.JsonPointerException) as exc:
            raise bad_request(f"Invalid patch: {exc}") from None
        if not isinstance(after, dict):
            raise bad_request("Invalid patch: the node must stay an object")
        after = _with_defaults(after)
        schemas.validate(after, _patch_schema(ctx), "Schema error for patch")
        after = schemas.node_booleans(after)
        changed = {k for k in _PATCHABLE if after.get(k) != before.get(k)}
        _apply_changes(session, ident, node, after, changed)
        node.updated_at = utcnow()
        session.flush()
        result = _render(ctx, session, node)
    return json_response(result)


def _apply_changes(
    session: Session,
    ident: str,
    node: Node,
    after: dict[str, Any],
    changed: set[str],
) -> None:
    if "driver" in changed and after["driver"] != DRIVER:
        raise _driver_error(str(after["driver"]))
    _check_interfaces(after)
    if "chassis_uuid" in changed:
        raise bad_request("Chassis are not supported by this server")
    if "name" in changed:
        name = after["name"]
        if name is not None and (
            not schemas.is_valid_name(name) or schemas.is_uuid_like(name)
        ):
            raise bad_request(
                f"Node {ident}: Cannot change name to invalid name '{name}'"
            )
        if name is not None and lookups.node_by_ident(
            session, name, False, lock=False
        ):
            raise conflict(f"A node with name {name} already exists.")
    if "resource_class" in changed and not (
        node.maintenance or node.provision_state in ns.CHANGE_ALLOWED
    ):
        raise conflict(
            f"Node {node.uuid} can not have resource_class updated unless "
            f"it is in one of allowed ({', '.join(ns.CHANGE_ALLOWED)}) "
            f"states. Current state is '{node.provision_state}'."
        )
    if "protected" in changed and after["protected"] and (
        node.provision_state != ns.ACTIVE
    ):
        raise conflict(
            f"Node {node.uuid} can only be made protected in provision "
            f"states 'active' or 'rescue', the current state is "
            f"'{node.provision_state}'")
    if "instance_uuid" in changed:
        _change_instance_uuid(session, node, after["instance_uuid"])
    if "parent_node" in changed:
        after["parent_node"] = _parent_uuid(session, node.owner,
                                            after["parent_node"])
    _check_retired(node, after, changed)
    _sync_instance_name(after, changed)
    for key in sorted(changed - {"instance_uuid", "chassis_uuid"}):
        setattr(node, key, after[key])
    if "maintenance" in changed and not after["maintenance"]:
        node.maintenance_reason = None
        node.fault = None
    if "protected" in changed and not after["protected"]:
        node.protected_reason = None


def _check_retired(node: Node, after: dict[str, Any],
                   changed: set[str]) -> None:
    """Ironic's rules: un-retiring clears the reason, a node cannot be
    retired while ``available``, and a reason needs ``retired``."""
    if "retired" in changed:
        if not after["retired"]:
            after["retired_reason"] = None
            changed.add("retired_reason")
        elif node.provision_state == ns.AVAILABLE:
            raise conflict(
                f"Node {node.uuid} can not have 'retired' set in provision "
                f"state 'available', the current state is "
                f"'{node.provision_state}'")
    if ("retired_reason" in changed and after["retired_reason"]
            and not after["retired"]):
        raise bad_request("The retired_reason field can only be set when "
                          "retired is True")


def _sync_instance_name(after: dict[str, Any], changed: set[str]) -> None:
    """Like Ironic, a changed ``instance_info.display_name`` becomes the
    ``instance_name`` of a node that has none."""
    display_name = (after.get("instance_info") or {}).get("display_name")
    if ("instance_info" in changed and not after.get("instance_name")
            and display_name):
        after["instance_name"] = display_name
        changed.add("instance_name")


def _change_instance_uuid(
    session: Session, node: Node, new: str | None
) -> None:
    if new is not None and not schemas.is_uuid(new):
        raise bad_request(f"Expected UUID for instance_uuid: {new}")
    if new is not None:
        new = schemas.canonical_uuid(new)
    allocation = releasing.holder_of(session, node)
    if allocation is not None:
        if new is not None:
            raise conflict(
                f"Node {node.uuid} has allocation {allocation.uuid}; remove "
                f"instance_uuid (or the allocation) before setting another"
            )
        error = releasing.instance_uuid_removal_refusal(node)
        if error:
            raise conflict(error)
        releasing.release_in_session(session, allocation)
        session.refresh(node)
        return
    if new is not None:
        holder = session.scalar(
            select(Node.uuid).where(
                Node.instance_uuid == new, Node.id != node.id
            )
        )
        taken = session.scalar(select(Allocation.id).where(
            Allocation.uuid == new))
        if holder is not None or taken is not None:
            raise conflict(
                f"Instance {new} is already associated with a node, it "
                f"cannot be associated with this other node {node.uuid}"
            )
    node.instance_uuid = new


def delete_node(ctx: Context, ident: str) -> Response:
    """DELETE /v1/nodes/{ident}; its allocation (maintenance), ports and
    VIFs go too."""
    with ctx.services.db.write() as session:
        node = find_node(ctx, session, ident)
        error = releasing.node_deletion_refusal(node)
        if error:
            raise conflict(error)
        allocation = releasing.holder_of(session, node)
        if allocation is not None:
            releasing.release_in_session(session, allocation)
        session.execute(
            delete(Allocation)
            .where(Allocation.node_id == node.id)
            .execution_options(synchronize_session=False)
        )
        for model in (NodeTrait, Port, NodeVif):  # what belongs to it
            session.execute(delete(model).where(model.node_id == node.id))
        session.delete(node)
    return empty_response(204)


# -- shards --------------------------------------------------------------
def list_shards(ctx: Context) -> Response:
    """GET /v1/shards (1.82): every shard with its node count, the
    largest first; nodes without a shard count as shard "None"."""
    if ctx.minor < versions.SHARDS:
        raise not_found("The API version does not allow shards")
    with ctx.services.db.read() as session:
        rows = session.execute(
            select(func.count(Node.id), Node.shard).group_by(Node.shard))
        counted = sorted(((int(count), str(shard)) for count, shard in rows),
                         key=lambda row: row[0], reverse=True)
    return json_response(
        {"shards": [{"name": name, "count": count}
                    for count, name in counted]})
