"""A node's provision and power state changes: the first step in one
write transaction, the rest by the fake hardware once it committed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Node, utcnow
from baremetal_allocclient.server.db.node_lookup import visible_node
from baremetal_allocclient.server.domain.errors import (
    Conflict,
    Forbidden,
    Invalid,
)
from baremetal_allocclient.server.domain.policy import NodeScope
from baremetal_allocclient.server.ironic import (
    fake_hardware,
    instance,
    interfaces,
)


@dataclass(frozen=True)
class Provision:
    """A ``PUT /v1/nodes/{node}/states/provision``, checked against the
    request's version."""

    verb: str
    configdrive: Any
    #: Why the request's version refuses the configdrive (raised after
    #: the node's state is checked, like Ironic); None: accepted.
    configdrive_error: str | None


def protected_message(uuid: str) -> str:
    """Why a protected node is not undeployed, rebuilt or deleted (403,
    Ironic's wording)."""
    return (f"Node {uuid} is protected and cannot be undeployed, rebuilt "
            f"or deleted")


def _refusal(node: Node, transition: ns.Transition | None,
             asked: Provision) -> str | None:
    """Why the node may not make the transition (Ironic's order and
    wording), or None."""
    if transition is None:
        return (f'The requested action "{asked.verb}" can not be performed '
                f'on node "{node.uuid}" while it is in state '
                f'"{node.provision_state}".')
    if asked.verb == "inspect" and interfaces.is_unsupported(
        interfaces.value_of(node, "inspect_interface")
    ):
        return interfaces.unsupported_message(node.driver, "inspect")
    if asked.configdrive_error:
        return asked.configdrive_error
    if node.maintenance and transition.final == ns.ACTIVE:
        # Like Ironic, only deploying is refused in maintenance.
        return (f"The provisioning operation can't be performed on node "
                f"{node.uuid} because it's in maintenance mode.")
    return None


def provision(db: Database, hardware: fake_hardware.FakeHardware,
              scope: NodeScope, ident: str, asked: Provision) -> str:
    """Start the transition ``asked.verb`` names (400 when the node may
    not make it); the node's UUID."""
    now = utcnow()
    with db.write() as session:
        node = visible_node(session, scope, ident)
        transition = ns.transition_for(asked.verb, node.provision_state)
        refusal = _refusal(node, transition, asked)
        if refusal is not None:
            raise Invalid(refusal)
        assert transition is not None
        if node.protected and transition.refused_when_protected:
            raise Forbidden(protected_message(node.uuid))
        state, target = fake_hardware.begin(node, transition, now)
        if transition.final == ns.ACTIVE:
            node.instance_info = instance.deployed(node.instance_info,
                                                   asked.configdrive)
        if state == ns.INSPECTING:
            node.inspection_started_at = now
            node.inspection_finished_at = None
        node_id, uuid = node.id, node.uuid
    if target is not None:
        hardware.continue_provision(node_id, state, target)
    return uuid


def power(db: Database, hardware: fake_hardware.FakeHardware,
          scope: NodeScope, ident: str, target: str,
          soft_allowed: bool) -> str:
    """Ask for the power state ``target`` (400 for an unknown one, or a
    soft one when not ``soft_allowed``; 409 to power off a node that
    disables it); the node's UUID."""
    result = ns.power_result(target)
    with db.write() as session:
        node = visible_node(session, scope, ident)
        if result is None or (target.startswith("soft")
                              and not soft_allowed):
            raise Invalid(
                f'The requested action "{target}" can not be performed on '
                f'node "{ident}" while it is in state "{node.power_state}".'
            )
        if result == ns.POWER_OFF and node.disable_power_off:
            raise Conflict(f"Failed to set node power state to {target}.")
        now = utcnow()
        if ns.changes_power(node.power_state, target):
            # Ironic records when it last changed the power state.
            node.driver_internal_info = {
                **(node.driver_internal_info or {}),
                "last_power_state_change": now.isoformat(),
            }
        node.target_power_state = target
        node.updated_at = now
        node_id, uuid = node.id, node.uuid
    hardware.finish_power(node_id, target)
    return uuid
