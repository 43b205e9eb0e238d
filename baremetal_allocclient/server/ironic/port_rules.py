"""A port's fields as Ironic checks them: version gates, normalised
values, defaults, and when a port of a node may change (pure).

Used by the port handlers (parsing a body) and the port service (a
``PATCH``, in its transaction).
"""

from __future__ import annotations

from typing import Any

from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.db.models import Node, Port
from baremetal_allocclient.server.domain import identifiers
from baremetal_allocclient.server.domain.errors import Conflict, Invalid
from baremetal_allocclient.server.ironic import views

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
#: The stored fields with a default, and that default.
DEFAULTS: dict[str, Any] = {
    "extra": {}, "local_link_connection": {}, "pxe_enabled": True,
    "is_smartnic": False, "physical_network": None, "name": None,
    "description": None, "vendor": None, "category": None,
    "available_for_dynamic_portgroup": True,
}


def newer_than_version(values: dict[str, Any], minor: int) -> bool:
    """Whether a port body names a field newer than the request's
    version (Ironic answers 406)."""
    link = values.get("local_link_connection")
    return (any(views.port_field_since(k) > minor for k in values)
            or ("node_ident" in values and minor < NODE_IDENT_SINCE)
            or (isinstance(link, dict) and "network_type" in link
                and minor < NETWORK_TYPE_SINCE))


def _boolean(name: str, value: object) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    return schemas.boolean(name, str(value))


def normalized(values: dict[str, Any]) -> dict[str, Any]:
    """A port body checked field by field as Ironic does after its schema
    (MAC address, UUIDs, booleans, local link), with normalised values."""
    result = dict(values)
    address = identifiers.normalize_mac(values["address"])
    if address is None:
        raise Invalid(
            f"Expected valid MAC address for address: {values['address']}")
    result["address"] = address
    for key in ("uuid", "node_uuid", "portgroup_uuid"):
        value = values.get(key)
        if value is not None and not identifiers.is_uuid_like(value):
            raise Invalid(f"Expected UUID for {key}: {value}")
        if value is not None:
            result[key] = identifiers.canonical_uuid(value)
    for key in ("pxe_enabled", "is_smartnic"):
        if key in values:
            result[key] = _boolean(key, values[key])
    link = values.get("local_link_connection")
    if link is not None:
        schemas.validate(link, schemas.LOCAL_LINK,
                         "Schema error for local_link_connection")
    if result.get("physical_network") == "":
        raise Invalid("A non-empty value is required when setting "
                          "physical_network")
    return result


def check_no_portgroup(values: dict[str, Any]) -> None:
    """Portgroups are not served: naming one is a 400."""
    if values.get("portgroup_uuid") is not None:
        raise Invalid(
            f"Portgroup {values['portgroup_uuid']} could not be found.")


def value(values: dict[str, Any], key: str) -> Any:
    """The value to store for ``key``: the given one, else its default."""
    given = values.get(key)
    return DEFAULTS[key] if given is None else given


def patchable(port: Port, node: Node) -> dict[str, Any]:
    """The document a ``PATCH`` of the port applies to."""
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


def check_update_allowed(port: Port, node: Node, changed: set[str]) -> None:
    """Ironic's conductor rules for changing a port of this node."""
    if node.provision_state == ns.INSPECTING:
        raise Conflict(f'Cannot update port "{port.uuid}" on "{node.uuid}" '
                       f'while it is in state "{ns.INSPECTING}".')
    if node.maintenance:
        return
    if "address" in changed and (
        node.provision_state == ns.ACTIVE or node.instance_uuid
    ):
        raise Conflict(
            f"Cannot update hardware address for port {port.uuid} as node "
            f"{node.uuid} is active or has instance UUID assigned")
    if changed & set(CONNECTIVITY) and (
        node.provision_state not in CONNECTIVITY_STATES
    ):
        raise Conflict(
            f"Port {port.uuid} can not have any connectivity attributes "
            f"({', '.join(CONNECTIVITY)}) updated unless node {node.uuid} "
            f"is in a {', '.join(CONNECTIVITY_STATES)} state or in "
            f"maintenance mode. The current state is "
            f"{node.provision_state}.")
