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
    RouteError,
    bad_request,
    conflict,
    no_route,
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
    fake_hardware,
    instance,
    interfaces,
)

DRIVER = "fake-hardware"
MAX_TRAITS = 50
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


# -- states --------------------------------------------------------------
def get_states(ctx: Context, ident: str) -> Response:
    """GET /v1/nodes/{ident}/states (boot mode and secure boot from
    1.75, as in Ironic)."""
    with ctx.services.db.read() as session:
        node = find_node(ctx, session, ident)
        states: dict[str, Any] = {
            "console_enabled": node.console_enabled,
            "last_error": node.last_error,
            "power_state": node.power_state,
            "provision_state": node.provision_state,
            "target_power_state": node.target_power_state,
            "target_provision_state": node.target_provision_state,
            "provision_updated_at": views.timestamp(
                node.provision_updated_at),
            "raid_config": {},
            "target_raid_config": {},
        }
        if ctx.minor >= versions.BOOT_MODE:
            states.update(boot_mode=node.boot_mode,
                          secure_boot=node.secure_boot)
        return json_response(states)


def set_provision_state(ctx: Context, ident: str) -> Response:
    """PUT /v1/nodes/{ident}/states/provision."""
    body = ctx.json_body()
    schemas.validate(body, schemas.PROVISION)
    assert isinstance(body, dict)
    verb = body["target"]
    if ctx.minor < ns.VERB_MIN_MINOR.get(verb, 1):
        raise not_acceptable()
    if body.get("deploy_steps") is not None and (
        ctx.minor < versions.DEPLOY_STEPS
    ):
        raise not_acceptable()
    configdrive = body.get("configdrive")
    now = utcnow()
    with ctx.services.db.write() as session:
        node = find_node(ctx, session, ident)
        transition = ns.transition_for(verb, node.provision_state)
        if transition is None:
            raise bad_request(
                f'The requested action "{verb}" can not be performed on '
                f'node "{node.uuid}" while it is in state '
                f'"{node.provision_state}".'
            )
        if verb == "inspect" and interfaces.is_unsupported(
            interfaces.value_of(node, "inspect_interface")
        ):
            raise bad_request(
                interfaces.unsupported_message(node.driver, "inspect"))
        error = instance.configdrive_error(verb, configdrive, ctx.minor)
        if error:  # checked after the state, like Ironic
            raise bad_request(error)
        if node.maintenance and transition.final == ns.ACTIVE:
            # Like Ironic, only deploying is refused in maintenance.
            raise bad_request(
                f"The provisioning operation can't be performed on node "
                f"{node.uuid} because it's in maintenance mode."
            )
        if node.protected and transition.releases_allocation:
            raise bad_request(
                f"Node {node.uuid} is protected and cannot be undeployed, "
                f"rebuilt or deleted"
            )
        state, target = fake_hardware.begin(node, transition, now)
        if transition.final == ns.ACTIVE:
            node.instance_info = instance.deployed(node.instance_info,
                                                   configdrive)
        if state == ns.INSPECTING:
            node.inspection_started_at = now
            node.inspection_finished_at = None
        node_id = node.id
        uuid = node.uuid
    if target is not None:
        ctx.services.hardware.continue_provision(node_id, state, target)
    response = empty_response(202)
    response.headers["Location"] = f"{ctx.base_url}/v1/nodes/{uuid}/states"
    return response


def set_power_state(ctx: Context, ident: str) -> Response:
    """PUT /v1/nodes/{ident}/states/power."""
    body = ctx.json_body()
    schemas.validate(body, schemas.POWER)
    assert isinstance(body, dict)
    target = body["target"]
    with ctx.services.db.write() as session:
        node = find_node(ctx, session, ident)
        result = ns.power_result(target)
        if result is None or (target.startswith("soft") and ctx.minor < 27):
            raise bad_request(
                f'The requested action "{target}" can not be performed on '
                f'node "{ident}" while it is in state "{node.power_state}".'
            )
        if result == ns.POWER_OFF and node.disable_power_off:
            raise conflict(f"Failed to set node power state to {target}.")
        now = utcnow()
        if ns.changes_power(node.power_state, target):
            # Ironic records when it last changed the power state.
            node.driver_internal_info = {
                **(node.driver_internal_info or {}),
                "last_power_state_change": now.isoformat(),
            }
        node.target_power_state = target
        node.updated_at = now
        node_id = node.id
        uuid = node.uuid
    ctx.services.hardware.finish_power(node_id, target)
    response = empty_response(202)
    response.headers["Location"] = f"{ctx.base_url}/v1/nodes/{uuid}/states"
    return response


def set_maintenance(ctx: Context, ident: str) -> Response:
    """PUT /v1/nodes/{ident}/maintenance."""
    body = ctx.json_body()
    if ctx.request.args.get("reason") is not None and body is None:
        body = {"reason": ctx.request.args["reason"]}
    schemas.validate(body, schemas.MAINTENANCE)
    reason = (body or {}).get("reason")
    with ctx.services.db.write() as session:
        node = find_node(ctx, session, ident)
        node.maintenance = True
        node.maintenance_reason = reason
        node.updated_at = utcnow()
    return empty_response(202)


def unset_maintenance(ctx: Context, ident: str) -> Response:
    """DELETE /v1/nodes/{ident}/maintenance."""
    with ctx.services.db.write() as session:
        node = find_node(ctx, session, ident)
        node.maintenance = False
        node.maintenance_reason = None
        node.fault = None
        node.updated_at = utcnow()
    return empty_response(202)


def validate_node(ctx: Context, ident: str) -> Response:
    """GET /v1/nodes/{ident}/validate: fake interfaces pass, the ``no-*``
    ones fail as Ironic's do."""
    with ctx.services.db.read() as session:
        node = find_node(ctx, session, ident)
        driver = node.driver
        chosen = {kind: interfaces.value_of(node, f"{kind}_interface")
                  for kind in interfaces.VALIDATED}
    result: dict[str, dict[str, Any]] = {}
    for kind, value in chosen.items():
        result[kind] = (
            {"result": False,
             "reason": interfaces.unsupported_message(driver, kind)}
            if interfaces.is_unsupported(value) else {"result": True})
    return json_response(result)


def list_firmware(ctx: Context, ident: str) -> Response:
    """GET /v1/nodes/{ident}/firmware (1.86): the firmware components
    cached for the node; fake hardware reports none, as in Ironic."""
    if ctx.minor < versions.FIRMWARE_INTERFACE:
        raise no_route()
    with ctx.services.db.read() as session:
        find_node(ctx, session, ident)
    return json_response({"firmware": []})


# -- traits --------------------------------------------------------------
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
            session.add(NodeTrait(node_id=node.id, trait=trait))
            lookups.touch_node(session, node.id)
    return empty_response(204)


def remove_trait(ctx: Context, ident: str, trait: str) -> Response:
    """DELETE /v1/nodes/{ident}/traits/{trait}."""
    _traits_gate(ctx, "DELETE")
    with ctx.services.db.write() as session:
        node = find_node(ctx, session, ident)
        result = session.execute(
            delete(NodeTrait).where(
                NodeTrait.node_id == node.id, NodeTrait.trait == trait
            )
        )
        if lookups.rowcount(result) == 0:
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
