"""A node's ``PATCH`` (and create): Ironic's rules for each field and
the changes, in the caller's session (no transaction of its own)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server.allocation.service import releasing
from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.models import (
    Node,
)
from baremetal_allocclient.server.domain import identifiers
from baremetal_allocclient.server.domain.errors import Conflict, Invalid
from baremetal_allocclient.server.domain.recording import Recorder
from baremetal_allocclient.server.ironic import (
    chassis_rows,
    interfaces,
    node_rows,
)

DRIVER = "fake-hardware"

PATCHABLE = (
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


def driver_error(driver: str) -> Invalid:
    return Invalid(
        f"No valid host was found. Reason: No conductor service registered "
        f'which supports driver {driver} for conductor group "". Ensure '
        f"the driver is valid and enabled."
    )


def check_interfaces(values: dict[str, Any]) -> None:
    for field in interfaces.INTERFACES:
        message = interfaces.invalid_value(field, values.get(field))
        if message is not None:
            raise Invalid(message)


def parent_uuid(session: Session, node_owner: str | None,
                 ident: str | None) -> str | None:
    """The UUID of the parent named by ``ident`` (a UUID or a name); an
    unknown node or one of another owner is the same 400, like Ironic,
    so that the answer does not tell whether the node exists."""
    if ident is None:
        return None
    parent = lookups.node_by_ident(
        session, identifiers.canonical_uuid(ident),
        identifiers.is_uuid_like(ident),
        lock=False)
    if parent is None or parent.owner != node_owner:
        raise Invalid(
            f"Unable to apply the requested parent_node '{ident}'. "
            f"Requested value was invalid.")
    return parent.uuid


def patchable(node: Node) -> dict[str, Any]:
    values: dict[str, Any] = {
        name: getattr(node, name, None)
        for name in PATCHABLE
        if name not in interfaces.INTERFACES
    }
    for field in interfaces.INTERFACES:
        values[field] = interfaces.value_of(node, field)
    for key in ("driver_info", "extra", "instance_info", "network_data",
                "properties"):
        values[key] = dict(values[key] or {})
    return values


_DICT_FIELDS = (
    "driver_info", "extra", "instance_info", "network_data", "properties",
)
_BOOL_DEFAULTS = {"maintenance": False, "protected": False, "retired": False,
                  "disable_power_off": False}


def with_defaults(after: dict[str, Any]) -> dict[str, Any]:
    """A removed field goes back to its default, like in Ironic."""
    result: dict[str, Any] = {}
    for key in PATCHABLE:
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


def apply_changes(
    session: Session,
    ident: str,
    node: Node,
    after: dict[str, Any],
    changed: set[str],
    recorder: Recorder,
) -> None:
    if "driver" in changed and after["driver"] != DRIVER:
        raise driver_error(str(after["driver"]))
    check_interfaces(after)
    if "chassis_uuid" in changed:
        after["chassis_uuid"] = chassis_rows.chassis_of_node(
            session, after["chassis_uuid"])
    if "name" in changed:
        name = after["name"]
        if name is not None and (
            not identifiers.is_valid_name(name)
            or identifiers.is_uuid_like(name)
        ):
            raise Invalid(
                f"Node {ident}: Cannot change name to invalid name '{name}'"
            )
        if name is not None and lookups.node_by_ident(
            session, name, False, lock=False
        ):
            raise Conflict(f"A node with name {name} already exists.")
    if "resource_class" in changed and not (
        node.maintenance or node.provision_state in ns.CHANGE_ALLOWED
    ):
        raise Conflict(
            f"Node {node.uuid} can not have resource_class updated unless "
            f"it is in one of allowed ({', '.join(ns.CHANGE_ALLOWED)}) "
            f"states. Current state is '{node.provision_state}'."
        )
    if "protected" in changed and after["protected"] and (
        node.provision_state != ns.ACTIVE
    ):
        raise Conflict(
            f"Node {node.uuid} can only be made protected in provision "
            f"states 'active' or 'rescue', the current state is "
            f"'{node.provision_state}'")
    if "protected_reason" in changed and after["protected_reason"] and \
            not after["protected"]:
        raise Invalid("The protected_reason field can only be set when "
                      "protected is True")
    if "instance_uuid" in changed:
        _change_instance_uuid(session, node, after["instance_uuid"],
                              recorder)
    if "parent_node" in changed:
        after["parent_node"] = parent_uuid(session, node.owner,
                                            after["parent_node"])
    _check_retired(node, after, changed)
    _sync_instance_name(after, changed)
    for key in sorted(changed - {"instance_uuid"}):
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
            raise Conflict(
                f"Node {node.uuid} can not have 'retired' set in provision "
                f"state 'available', the current state is "
                f"'{node.provision_state}'")
    if ("retired_reason" in changed and after["retired_reason"]
            and not after["retired"]):
        raise Invalid("The retired_reason field can only be set when "
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
    session: Session, node: Node, new: str | None, recorder: Recorder
) -> None:
    if new is not None and not identifiers.is_uuid(new):
        raise Invalid(f"Expected UUID for instance_uuid: {new}")
    if new is not None:
        new = identifiers.canonical_uuid(new)
        if new == node.instance_uuid:
            return
        if node.instance_uuid is not None:  # Ironic's NodeAssociated
            raise Conflict(f"Node {node.uuid} is associated with instance "
                           f"{node.instance_uuid}.")
    if releasing.release_for_instance_uuid(session, node, new, recorder):
        return
    if new is not None and node_rows.instance_taken(session, new, node.id):
        raise Conflict(
            f"Instance {new} is already associated with a node, it "
            f"cannot be associated with this other node {node.uuid}"
        )
    node.instance_uuid = new


