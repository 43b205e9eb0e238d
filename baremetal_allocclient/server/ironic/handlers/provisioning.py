"""``/v1/nodes/{node}/states``, maintenance, validation and firmware of a
node (fake-hardware only)."""

from __future__ import annotations

from typing import Any

from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.api import versions, views
from baremetal_allocclient.server.api.context import (
    Context,
    empty_response,
    json_response,
    node_scope,
)
from baremetal_allocclient.server.api.errors import (
    no_route,
    not_acceptable,
)
from baremetal_allocclient.server.api.http import Response
from baremetal_allocclient.server.ironic import (
    instance,
    interfaces,
)
from baremetal_allocclient.server.ironic import views as ironic_views
from baremetal_allocclient.server.ironic.handlers.services import (
    ironic_services,
)
from baremetal_allocclient.server.ironic.service import (
    maintenance,
    nodes,
    provisioning,
)

#: The minor version that introduced soft power off and soft reboot.
SOFT_POWER_SINCE = 27


def get_states(ctx: Context, ident: str) -> Response:
    """GET /v1/nodes/{ident}/states (RAID configuration from 1.12, boot
    mode and secure boot from 1.75, as in Ironic)."""
    node = nodes.find(ctx.services.db, node_scope(ctx), ident)
    states: dict[str, Any] = {
        "console_enabled": node.console_enabled,
        "last_error": node.last_error,
        "power_state": node.power_state,
        "provision_state": ironic_views.shown_provision_state(
            node.provision_state, ctx.minor),
        "target_power_state": node.target_power_state,
        "target_provision_state": node.target_provision_state,
        "provision_updated_at": views.timestamp(node.provision_updated_at),
    }
    if ctx.minor >= versions.RAID_CONFIG:
        states.update(raid_config={}, target_raid_config={})
    if ctx.minor >= versions.BOOT_MODE:
        states.update(boot_mode=node.boot_mode, secure_boot=node.secure_boot)
    return json_response(states)


def _accepted(ctx: Context, uuid: str) -> Response:
    """202, pointing at the node's states."""
    response = empty_response(202)
    response.headers["Location"] = f"{ctx.base_url}/v1/nodes/{uuid}/states"
    return response


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
    services = ironic_services(ctx)
    uuid = provisioning.provision(
        services.db, services.hardware, node_scope(ctx), ident,
        provisioning.Provision(
            verb=verb, configdrive=configdrive,
            configdrive_error=instance.configdrive_error(
                verb, configdrive, ctx.minor)))
    return _accepted(ctx, uuid)


def set_power_state(ctx: Context, ident: str) -> Response:
    """PUT /v1/nodes/{ident}/states/power."""
    body = ctx.json_body()
    schemas.validate(body, schemas.POWER)
    assert isinstance(body, dict)
    services = ironic_services(ctx)
    uuid = provisioning.power(
        services.db, services.hardware, node_scope(ctx), ident,
        body["target"], soft_allowed=ctx.minor >= SOFT_POWER_SINCE)
    return _accepted(ctx, uuid)


def set_maintenance(ctx: Context, ident: str) -> Response:
    """PUT /v1/nodes/{ident}/maintenance."""
    body = ctx.json_body()
    if ctx.request.args.get("reason") is not None and body is None:
        body = {"reason": ctx.request.args["reason"]}
    schemas.validate(body, schemas.MAINTENANCE)
    reason = (body or {}).get("reason")
    maintenance.enter(ctx.services.db, node_scope(ctx), ident, reason)
    return empty_response(202)


def unset_maintenance(ctx: Context, ident: str) -> Response:
    """DELETE /v1/nodes/{ident}/maintenance."""
    maintenance.leave(ctx.services.db, node_scope(ctx), ident)
    return empty_response(202)


def validate_node(ctx: Context, ident: str) -> Response:
    """GET /v1/nodes/{ident}/validate: fake interfaces pass, the ``no-*``
    ones fail as Ironic's do."""
    node = nodes.find(ctx.services.db, node_scope(ctx), ident)
    result: dict[str, dict[str, Any]] = {}
    for kind in interfaces.VALIDATED:
        value = interfaces.value_of(node, f"{kind}_interface")
        result[kind] = (
            {"result": False,
             "reason": interfaces.unsupported_message(node.driver, kind)}
            if interfaces.is_unsupported(value) else {"result": True})
    return json_response(result)


def list_firmware(ctx: Context, ident: str) -> Response:
    """GET /v1/nodes/{ident}/firmware (1.86): the firmware components
    cached for the node; fake hardware reports none, as in Ironic."""
    if ctx.minor < versions.FIRMWARE_INTERFACE:
        raise no_route()
    nodes.find(ctx.services.db, node_scope(ctx), ident)
    return json_response({"firmware": []})
