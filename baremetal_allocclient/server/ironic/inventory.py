"""Bifrost-style inventories (JSON or YAML) and enrolling them.

An inventory maps node names to node descriptions (or is a list of
descriptions carrying a ``name``).  Bifrost's own inventories are taken as
they are, read as bifrost and the ``openstack.cloud.baremetal_node``
module read them:

- a node's ``nics`` (each a ``mac``, optionally with ``extra``,
  ``pxe_enabled`` and ``physical_network``) become its ports;
- ``properties.ram`` and ``properties.disk_size`` are ``memory_mb`` and
  ``local_gb``;
- the legacy nested ``driver_info`` sections (``power``, ``deploy``,
  ``management``, ``console``) are flattened into ``driver_info``;
- ``instance_info`` is kept (a ``configdrive`` in it shows masked);
- the keys bifrost's playbooks use on the host side (static addressing,
  DHCP, the IPA image URLs, Ansible connection settings) are accepted and
  ignored; ``Inventory.ignored`` names the ones seen;
- any driver may be enrolled as ``fake-hardware`` (``Defaults.any_driver``)
  with its ``driver_info`` kept, and nodes that name no resource class or
  traits get ``Defaults.resource_class`` and ``Defaults.traits``.

Enrolled nodes go straight to ``available`` with power off: ready to
allocate, which is what the fake driver would reach after manage, provide
and power off.
"""

from __future__ import annotations

import datetime
import json
import uuid as uuidlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml
from sqlalchemy import select
from sqlalchemy.orm import Session

from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.api import storable
from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Node, Port, utcnow
from baremetal_allocclient.server.domain import identifiers

DRIVER = "fake-hardware"
_KNOWN = {
    "name", "uuid", "driver", "resource_class", "traits", "properties",
    "owner", "lessee", "description", "extra", "driver_info", "nics",
    "conductor_group", "shard", "instance_info",
}
#: Keys bifrost documents for its playbooks' host-side work (static
#: addressing in the config drive, dnsmasq, the IPA image URLs, Ansible's
#: connection) and hardware interfaces fake-hardware chooses itself:
#: accepted and ignored.
HOST_SIDE_KEYS = frozenset({
    "host_groups", "ipv4_address", "ipv4_subnet_mask", "ipv4_interface_mac",
    "ipv4_gateway", "ipv4_nameserver", "network_mtu", "ansible_ssh_host",
    "ansible_host", "network_interface", "inventory_dhcp",
    "inventory_dhcp_static_ip", "inventory_dns", "addressing_mode",
    "provisioning_ipv4_address", "ipa_kernel_url", "ipa_ramdisk_url",
    "ssh_public_key_path", "deploy_root_gb", "boot_interface",
})
#: ``properties`` keys of openstack.cloud.baremetal_node and what Ironic
#: calls them.
PROPERTY_ALIASES = {"ram": "memory_mb", "disk_size": "local_gb"}
#: Legacy nested ``driver_info`` sections that bifrost flattens.
DRIVER_INFO_SECTIONS = ("power", "deploy", "management", "console")


class InventoryError(ValueError):
    """The inventory cannot be enrolled; the message says where and why."""


@dataclass(frozen=True)
class NicSpec:
    """One NIC of a node: it becomes a port (``mac`` is its address)."""

    address: str
    extra: dict[str, Any] = field(default_factory=dict)
    pxe_enabled: bool = True
    physical_network: str | None = None


@dataclass(frozen=True)
class NodeSpec:
    """One node to enroll."""

    name: str
    uuid: str
    resource_class: str | None
    traits: tuple[str, ...] = ()
    properties: dict[str, Any] = field(default_factory=dict)
    owner: str | None = None
    lessee: str | None = None
    description: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    driver_info: dict[str, Any] = field(default_factory=dict)
    nics: tuple[NicSpec, ...] = ()
    conductor_group: str = ""
    shard: str | None = None
    instance_info: dict[str, Any] = field(default_factory=dict)
    #: The inventory's driver when it was enrolled as fake-hardware.
    mapped_driver: str | None = None


@dataclass(frozen=True)
class Defaults:
    """What enrolling fills in where the inventory is silent."""

    #: For nodes that name no resource class (bifrost configures Ironic's
    #: ``default_resource_class`` as ``baremetal``).
    resource_class: str | None = None
    #: For nodes that name no traits.
    traits: tuple[str, ...] = ()
    #: Enroll every driver as fake-hardware, keeping its driver_info.
    any_driver: bool = False


@dataclass(frozen=True)
class Inventory:
    """A parsed inventory: its nodes and the host-side keys it carried."""

    nodes: tuple[NodeSpec, ...]
    ignored: frozenset[str] = frozenset()

    @property
    def mapped_drivers(self) -> set[str]:
        """Drivers enrolled as fake-hardware."""
        return {n.mapped_driver for n in self.nodes if n.mapped_driver}


def load(text: str, filename: str = "",
         defaults: Defaults = Defaults()) -> list[NodeSpec]:
    """Parse an inventory document (YAML is a superset of JSON)."""
    return list(parse(text, filename, defaults).nodes)


def parse(text: str, filename: str = "",
          defaults: Defaults = Defaults()) -> Inventory:
    """Parse an inventory document and say which keys were ignored."""
    try:
        if filename.endswith(".json"):
            data = json.loads(text)
        else:
            data = yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise InventoryError(f"{filename or 'inventory'}: {exc}") from None
    if isinstance(data, dict):
        entries = []
        for name, spec in data.items():
            if not isinstance(spec, dict):
                raise InventoryError(f"{name}: expected a mapping")
            entries.append({"name": name, **spec})
    elif isinstance(data, list):
        entries = data
    else:
        raise InventoryError(
            "an inventory is a mapping of node names to nodes or a list "
            "of nodes"
        )
    bad = [t for t in defaults.traits if not identifiers.is_valid_trait(t)]
    if bad:
        raise InventoryError(f"default trait {bad[0]!r} is neither a "
                             f"standard (os-traits) nor a CUSTOM_ trait")
    specs = [_spec(i, entry, defaults) for i, entry in enumerate(entries)]
    _check_unique(specs)
    ignored = {key for entry in entries if isinstance(entry, dict)
               for key in entry if key in HOST_SIDE_KEYS}
    return Inventory(tuple(specs), frozenset(ignored))


def _check_unique(specs: Sequence[NodeSpec]) -> None:
    seen: set[str] = set()
    addresses: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise InventoryError(f"{spec.name}: duplicate node name")
        seen.add(spec.name)
        for nic in spec.nics:
            if nic.address in addresses:
                raise InventoryError(
                    f"{spec.name}: MAC address {nic.address} appears twice")
            addresses.add(nic.address)


_NIC_KEYS = {"mac", "extra", "pxe_enabled", "physical_network"}


def _nic(where: str, entry: object) -> NicSpec:
    """One entry of a node's ``nics`` (bifrost: ``{mac: ...}``)."""
    if not isinstance(entry, dict):
        raise InventoryError(f"{where}: each of nics must be a mapping")
    unknown = set(entry) - _NIC_KEYS
    if unknown:
        raise InventoryError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))} in nics")
    address = identifiers.normalize_mac(entry.get("mac"))
    if address is None:
        raise InventoryError(
            f"{where}: nics: {entry.get('mac')!r} is not a MAC address "
            f"(six colon-separated octets)")
    pxe = entry.get("pxe_enabled", True)
    if not isinstance(pxe, bool):
        raise InventoryError(f"{where}: nics: pxe_enabled must be a boolean")
    network = _optional_str(where, "physical_network",
                            entry.get("physical_network"))
    if network is not None and not 0 < len(network) <= 64:
        raise InventoryError(
            f"{where}: nics: physical_network must have 1 to 64 characters")
    return NicSpec(address=address,
                   extra=_mapping(where, "extra", entry.get("extra")),
                   pxe_enabled=pxe, physical_network=network)


def _nics(where: str, value: object) -> tuple[NicSpec, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InventoryError(f"{where}: nics must be a list")
    return tuple(_nic(where, entry) for entry in value)


def _mapping(where: str, key: str, value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InventoryError(f"{where}: {key} must be a mapping")
    return value


def _optional_str(where: str, key: str, value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise InventoryError(f"{where}: {key} must be a string")


def _spec(index: int, entry: object, defaults: Defaults) -> NodeSpec:
    if not isinstance(entry, dict):
        raise InventoryError(f"entry {index}: expected a mapping")
    name = entry.get("name")
    where = str(name) if name is not None else f"entry {index}"
    problem = storable.value_problem(entry)
    if problem:
        raise InventoryError(f"{where!r}: invalid value: {problem}")
    if not identifiers.is_valid_name(name) or identifiers.is_uuid_like(
            str(name)):
        raise InventoryError(f"{where}: invalid node name {name!r}")
    unknown = set(entry) - _KNOWN - HOST_SIDE_KEYS
    if unknown:
        raise InventoryError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}"
        )
    driver = entry.get("driver", DRIVER)
    if driver != DRIVER and not defaults.any_driver:
        raise InventoryError(
            f"{where}: driver {driver!r} is not supported (only {DRIVER}; "
            f"enroll --fake-hardware enrolls every driver as {DRIVER})"
        )
    uuid = entry.get("uuid") or str(uuidlib.uuid4())
    if not identifiers.is_uuid(uuid):
        raise InventoryError(f"{where}: invalid uuid {uuid!r}")
    uuid = identifiers.canonical_uuid(uuid)  # as the API stores them
    rc = _optional_str(where, "resource_class", entry.get("resource_class"))
    if rc is not None and len(rc) > schemas.RESOURCE_CLASS_MAX:
        raise InventoryError(f"{where}: resource_class is too long")
    return NodeSpec(
        name=str(name),
        uuid=uuid,
        resource_class=rc or defaults.resource_class,
        traits=_traits(where, entry.get("traits")) or defaults.traits,
        properties=_properties(where, entry.get("properties")),
        owner=_optional_str(where, "owner", entry.get("owner")),
        lessee=_optional_str(where, "lessee", entry.get("lessee")),
        description=_optional_str(
            where, "description", entry.get("description")
        ),
        extra=_mapping(where, "extra", entry.get("extra")),
        driver_info=_driver_info(where, entry.get("driver_info")),
        nics=_nics(where, entry.get("nics")),
        conductor_group=(_optional_str(
            where, "conductor_group", entry.get("conductor_group")
        ) or "").lower(),
        shard=_optional_str(where, "shard", entry.get("shard")),
        instance_info=_mapping(where, "instance_info",
                               entry.get("instance_info")),
        mapped_driver=None if driver == DRIVER else str(driver),
    )


def _traits(where: str, value: object) -> tuple[str, ...]:
    traits = value or []
    if not isinstance(traits, list):
        raise InventoryError(f"{where}: traits must be a list")
    bad = [t for t in traits if not identifiers.is_valid_trait(t)]
    if bad:
        raise InventoryError(
            f"{where}: {bad[0]!r} is neither a standard (os-traits) nor a "
            f"CUSTOM_ trait"
        )
    return tuple(sorted(set(traits)))


def _properties(where: str, value: object) -> dict[str, Any]:
    """``properties`` with openstack.cloud's ``ram``/``disk_size`` under
    Ironic's names."""
    properties = dict(_mapping(where, "properties", value))
    for alias, key in PROPERTY_ALIASES.items():
        if alias not in properties:
            continue
        if key in properties:
            raise InventoryError(
                f"{where}: properties has both {alias} and {key}")
        properties[key] = properties.pop(alias)
    return properties


def _driver_info(where: str, value: object) -> dict[str, Any]:
    """``driver_info`` with bifrost's legacy nested sections flattened."""
    info = dict(_mapping(where, "driver_info", value))
    for section in DRIVER_INFO_SECTIONS:
        nested = info.get(section)
        if not isinstance(nested, dict):
            continue
        del info[section]
        clash = sorted(set(nested) & set(info))
        if clash:
            raise InventoryError(
                f"{where}: driver_info.{section}.{clash[0]} is also given "
                f"outside {section}")
        info.update(nested)
    return info


def enroll(db: Database, specs: Sequence[NodeSpec]) -> tuple[int, int]:
    """Create the nodes, ``available`` and powered off, in one transaction.

    Nodes whose name already exists are skipped, so enrolling the same
    inventory twice is harmless.  Returns (created, skipped).
    """
    created = skipped = 0
    now = utcnow()
    with db.write() as session:
        names = [s.name for s in specs]
        existing = set(
            session.scalars(select(Node.name).where(Node.name.in_(names)))
        )
        for spec in specs:
            if spec.name in existing:
                skipped += 1
                continue
            if lookups.node_by_ident(session, spec.uuid, by_uuid=True):
                raise InventoryError(
                    f"{spec.name}: a node with UUID {spec.uuid} exists"
                )
            node = Node(
                uuid=spec.uuid,
                name=spec.name,
                driver=DRIVER,
                resource_class=spec.resource_class,
                provision_state=ns.AVAILABLE,
                provision_updated_at=now,
                power_state=ns.POWER_OFF,
                maintenance=False,
                owner=spec.owner,
                lessee=spec.lessee,
                description=spec.description,
                instance_info=spec.instance_info,
                properties=spec.properties,
                extra=spec.extra,
                driver_info=spec.driver_info,
                driver_internal_info={},
                network_data={},
                protected=False,
                retired=False,
                conductor_group=spec.conductor_group,
                shard=spec.shard,
                created_at=now,
            )
            session.add(node)
            session.flush()
            lookups.replace_traits(session, node.id, spec.traits)
            _add_ports(session, spec, node.id, now)
            created += 1
    return created, skipped


def _add_ports(session: Session, spec: NodeSpec, node_id: int,
               now: datetime.datetime) -> None:
    """The node's NICs as ports; a MAC address another port has is an
    error (the whole enrollment is rolled back)."""
    for nic in spec.nics:
        if session.scalar(select(Port.id).where(
                Port.address == nic.address)) is not None:
            raise InventoryError(
                f"{spec.name}: a port with MAC address {nic.address} "
                f"already exists")
        session.add(Port(
            uuid=str(uuidlib.uuid4()), address=nic.address, node_id=node_id,
            extra=nic.extra, internal_info={}, local_link_connection={},
            pxe_enabled=nic.pxe_enabled,
            physical_network=nic.physical_network, is_smartnic=False,
            created_at=now,
        ))
