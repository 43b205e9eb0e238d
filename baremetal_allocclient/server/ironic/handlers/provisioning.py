"""``/v1/nodes/{node}/states``, maintenance, validation and firmware of a
node (fake-hardware only)."""

from __future__ import annotations

from typing import Any

from werkzeug.wrappers import Response

from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server.api import (
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
    bad_request,
    conflict,
    no_route,
    not_acceptable,
)
from baremetal_allocclient.server.db.models import (
    utcnow,
)
from baremetal_allocclient.server.ironic import (
    fake_hardware,
    instance,
    interfaces,
)


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
