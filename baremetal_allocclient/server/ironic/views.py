"""JSON representations of nodes and ports for a given version.

Each field is declared once with the minor version that introduced it;
the same table drives rendering, ``fields=`` validation and 406s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server.api import versions
from baremetal_allocclient.server.api.errors import (
    bad_request,
    not_acceptable,
)
from baremetal_allocclient.server.api.views import links, timestamp
from baremetal_allocclient.server.db.models import Chassis, Node, Port
from baremetal_allocclient.server.ironic import interfaces, secrets

# Node fields in Ironic's output order with their introducing version.
NODE_FIELDS: tuple[tuple[str, int], ...] = (
    ("uuid", 1), ("created_at", 1), ("updated_at", 1),
    ("automated_clean", 47), ("bios_interface", 40),
    ("boot_interface", 31), ("boot_mode", 75), ("clean_step", 7),
    ("conductor_group", 46), ("console_enabled", 1),
    ("console_interface", 31), ("disable_power_off", 95),
    ("deploy_interface", 31), ("deploy_step", 44), ("description", 51),
    ("driver", 1), ("driver_info", 1), ("driver_internal_info", 3),
    ("extra", 1), ("fault", 42), ("firmware_interface", 86),
    ("health", 109), ("inspection_finished_at", 6),
    ("inspection_started_at", 6), ("inspect_interface", 31),
    ("instance_info", 1), ("instance_name", 104), ("instance_uuid", 1),
    ("last_error", 1), ("lessee", 65), ("maintenance", 1),
    ("maintenance_reason", 1), ("management_interface", 31), ("name", 5),
    ("network_data", 66), ("network_interface", 20), ("owner", 50),
    ("parent_node", 83), ("power_interface", 31), ("power_state", 1),
    ("properties", 1), ("protected", 48), ("protected_reason", 48),
    ("provision_state", 1), ("provision_updated_at", 1),
    ("raid_config", 12), ("raid_interface", 31), ("rescue_interface", 38),
    ("reservation", 1), ("resource_class", 21), ("retired", 61),
    ("retired_reason", 61), ("secure_boot", 75), ("service_step", 87),
    ("shard", 82), ("storage_interface", 33), ("target_power_state", 1),
    ("target_provision_state", 1), ("target_raid_config", 12),
    ("traits", 37), ("vendor_interface", 31), ("conductor", 49),
    ("allocation_uuid", 52), ("chassis_uuid", 1),
)
#: Ironic renders ``links`` just before the first of these fields.
_AFTER_LINKS = frozenset({"conductor", "allocation_uuid", "chassis_uuid"})
NODE_LIST_FIELDS = (
    "uuid", "instance_uuid", "maintenance", "power_state", "provision_state",
    "name",
)
_NODE_SUBRESOURCES: tuple[tuple[str, int], ...] = (
    ("ports", 1), ("states", 14), ("portgroups", 24), ("volume", 32),
)
NODE_SORT_KEYS = (
    "id", "uuid", "name", "created_at", "updated_at", "provision_state",
    "power_state", "resource_class", "driver", "owner", "lessee",
    "maintenance", "instance_uuid", "provision_updated_at",
)
def node_fields(minor: int) -> list[str]:
    """Node fields that exist at this version."""
    return [name for name, since in NODE_FIELDS if minor >= since]


def check_node_fields(fields: Sequence[str] | None, minor: int) -> None:
    """``fields=`` on nodes: 406 for too-new fields, 400 for unknown ones."""
    if fields is None:
        return
    if minor < versions.FIELDS_SELECTOR:
        raise not_acceptable()
    known = dict(NODE_FIELDS)
    unknown = [f for f in fields if f not in known]
    if unknown:
        raise bad_request(f'Field(s) "{", ".join(unknown)}" are not valid')
    if any(known[f] > minor for f in fields):
        raise not_acceptable()


def shown_provision_state(state: str, minor: int) -> str | None:
    """A provision state as a version shows it (pure): before 1.2 an
    available node's state is null, as in Ironic."""
    if state == ns.AVAILABLE and minor < versions.AVAILABLE_STATE:
        return None
    return state


def node_view(
    node: Node,
    traits: Sequence[str],
    allocation_uuid: str | None,
    conductor: str,
    base_url: str,
    minor: int,
    fields: Sequence[str] | None = None,
) -> dict[str, Any]:
    """A node as Ironic renders it at ``minor``, optionally only ``fields``."""
    values: dict[str, Any] = {
        "uuid": node.uuid,
        "created_at": timestamp(node.created_at),
        "updated_at": timestamp(node.updated_at),
        "automated_clean": node.automated_clean,
        "boot_mode": node.boot_mode,
        "clean_step": {},
        "conductor_group": node.conductor_group,
        "console_enabled": node.console_enabled,
        "disable_power_off": node.disable_power_off,
        "deploy_step": {},
        "description": node.description,
        "driver": node.driver,
        "driver_info": secrets.driver_info(node.driver_info),
        "driver_internal_info": secrets.driver_internal_info(
            node.driver_internal_info),
        "extra": node.extra or {},
        "fault": node.fault,
        # fake-hardware's management interface reports no health, so
        # Ironic leaves it null as well.
        "health": None,
        "inspection_finished_at": timestamp(node.inspection_finished_at),
        "inspection_started_at": timestamp(node.inspection_started_at),
        "instance_info": secrets.instance_info(node.instance_info),
        "instance_name": node.instance_name,
        "instance_uuid": node.instance_uuid,
        "last_error": node.last_error,
        "lessee": node.lessee,
        "maintenance": node.maintenance,
        "maintenance_reason": node.maintenance_reason,
        "name": node.name,
        "network_data": node.network_data or {},
        "owner": node.owner,
        "parent_node": node.parent_node,
        "power_state": node.power_state,
        "properties": node.properties or {},
        "protected": node.protected,
        "protected_reason": node.protected_reason,
        "provision_state": shown_provision_state(node.provision_state,
                                                 minor),
        "provision_updated_at": timestamp(node.provision_updated_at),
        "raid_config": {},
        "reservation": None,
        "resource_class": node.resource_class,
        "retired": node.retired,
        "retired_reason": node.retired_reason,
        "secure_boot": node.secure_boot,
        "service_step": {},
        "shard": node.shard,
        "target_power_state": node.target_power_state,
        "target_provision_state": node.target_provision_state,
        "target_raid_config": {},
        "traits": list(traits),
        "conductor": conductor,
        "allocation_uuid": allocation_uuid,
        "chassis_uuid": node.chassis_uuid,
    }
    for field in interfaces.INTERFACES:
        values[field] = interfaces.value_of(node, field)
    names = list(fields) if fields is not None else node_fields(minor)
    own_links = links(base_url, f"nodes/{node.uuid}")
    result: dict[str, Any] = {}
    for name in names:
        # Ironic's position for links: before the first of these.
        if name in _AFTER_LINKS and "links" not in result:
            result["links"] = own_links
        result[name] = values[name]
    result.setdefault("links", own_links)
    if fields is None:
        for sub, since in _NODE_SUBRESOURCES:
            if minor >= since:
                result[sub] = links(base_url, f"nodes/{node.uuid}/{sub}")
    return result


# -- ports -----------------------------------------------------------------
#: Port fields in Ironic's output order with their introducing version;
#: the newest ones are never served below their version (a request for
#: them is a 406), like Ironic.
PORT_FIELDS: tuple[tuple[str, int], ...] = (
    ("uuid", 1), ("created_at", 1), ("updated_at", 1), ("address", 1),
    ("extra", 1), ("internal_info", 18), ("is_smartnic", 53),
    ("local_link_connection", 19), ("physical_network", 34),
    ("pxe_enabled", 19), ("node_uuid", 1), ("name", 88),
    ("description", 97), ("vendor", 100), ("category", 101),
    ("available_for_dynamic_portgroup", 111), ("links", 1),
    ("portgroup_uuid", 24),
)
PORT_LIST_FIELDS = ("uuid", "address")
PORT_SORT_KEYS = (
    "id", "uuid", "address", "created_at", "updated_at", "pxe_enabled",
    "physical_network", "is_smartnic",
)
#: Ironic refuses these sort keys with its own wording.
PORT_UNSORTABLE = ("extra", "internal_info", "local_link_connection")


def port_field_since(name: str) -> int:
    """The minor version that introduced a port field (1 if unknown)."""
    return dict(PORT_FIELDS).get(name, 1)


def check_port_fields(fields: Sequence[str] | None, minor: int) -> None:
    """``fields=`` on ports: 406 below 1.8 and for too-new fields, then
    400 for unknown ones (Ironic's order and wording)."""
    if fields is None:
        return
    if minor < versions.FIELDS_SELECTOR:
        raise not_acceptable()
    known = dict(PORT_FIELDS)
    if any(known.get(f, 1) > minor for f in fields):
        raise not_acceptable()
    unknown = [f for f in fields if f not in known]
    if unknown:
        raise bad_request(f'Field(s) "{", ".join(unknown)}" are not valid')


def port_view(
    port: Port,
    node_uuid: str,
    base_url: str,
    minor: int,
    fields: Sequence[str] | None = None,
) -> dict[str, Any]:
    """A port as Ironic renders it at ``minor``, optionally only
    ``fields`` (links always)."""
    values: dict[str, Any] = {
        "uuid": port.uuid,
        "created_at": timestamp(port.created_at),
        "updated_at": timestamp(port.updated_at),
        "address": port.address,
        "extra": port.extra or {},
        "internal_info": port.internal_info or {},
        "is_smartnic": port.is_smartnic,
        "local_link_connection": port.local_link_connection or {},
        "physical_network": port.physical_network,
        "pxe_enabled": port.pxe_enabled,
        "node_uuid": node_uuid,
        "links": links(base_url, f"ports/{port.uuid}"),
        "portgroup_uuid": None,
        "name": port.name,
        "description": port.description,
        "vendor": port.vendor,
        "category": port.category,
        "available_for_dynamic_portgroup":
            port.available_for_dynamic_portgroup,
    }
    return {
        name: values[name]
        for name, since in PORT_FIELDS
        if since <= minor and (
            fields is None or name in fields or name == "links")
    }


# -- chassis ---------------------------------------------------------------
#: Chassis fields in Ironic's output order (all of API 1.0).
CHASSIS_FIELDS = ("uuid", "created_at", "updated_at", "description",
                  "extra", "links", "nodes")
CHASSIS_LIST_FIELDS = ("uuid", "description")
CHASSIS_SORT_KEYS = ("id", "uuid", "description", "created_at",
                     "updated_at")
#: Ironic refuses this sort key with its own wording.
CHASSIS_UNSORTABLE = ("extra",)


def check_chassis_fields(fields: Sequence[str] | None, minor: int) -> None:
    """``fields=`` on chassis: 406 below 1.8, 400 for unknown ones."""
    if fields is None:
        return
    if minor < versions.FIELDS_SELECTOR:
        raise not_acceptable()
    unknown = [f for f in fields if f not in CHASSIS_FIELDS]
    if unknown:
        raise bad_request(f'Field(s) "{", ".join(unknown)}" are not valid')


def chassis_view(chassis: Chassis, base_url: str,
                 fields: Sequence[str] | None = None) -> dict[str, Any]:
    """A chassis as Ironic renders it, optionally only ``fields`` (links
    always).  Ironic's ``nodes`` is a list holding the list of links (a
    stray comma in its code, kept by its own response schema)."""
    values: dict[str, Any] = {
        "uuid": chassis.uuid,
        "created_at": timestamp(chassis.created_at),
        "updated_at": timestamp(chassis.updated_at),
        "description": chassis.description,
        "extra": chassis.extra or {},
        "links": links(base_url, f"chassis/{chassis.uuid}"),
        "nodes": [links(base_url, f"chassis/{chassis.uuid}/nodes")],
    }
    return {name: values[name] for name in CHASSIS_FIELDS
            if fields is None or name in fields or name == "links"}
