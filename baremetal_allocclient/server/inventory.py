"""Bifrost-style inventories (JSON or YAML) and enrolling them.

An inventory maps node names to node descriptions (or is a list of
descriptions carrying a ``name``).  A node's ``nics`` (each a ``mac``,
optionally with ``extra``, ``pxe_enabled`` and ``physical_network``)
become its ports.  Enrolled nodes go straight to
``available`` with power off: ready to allocate, which is what the fake
driver would reach after manage, provide and power off.
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

from baremetal_allocclient.server.api import schemas, storable
from baremetal_allocclient.server.db import queries
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Node, Port, utcnow
from baremetal_allocclient.server.logic import node_states as ns

DRIVER = "fake-hardware"
_KNOWN = {
    "name", "uuid", "driver", "resource_class", "traits", "properties",
    "owner", "lessee", "description", "extra", "driver_info", "nics",
    "conductor_group", "shard",
}
# Keys bifrost inventories carry for other tools; accepted and ignored.
_IGNORED = {
    "host_groups", "ipv4_address", "ipv4_subnet_mask",
    "ipv4_gateway", "ipv4_nameserver", "ansible_ssh_host",
    "ansible_host", "network_interface", "instance_info",
    "inventory_dhcp", "inventory_dns", "addressing_mode",
}


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


def load(text: str, filename: str = "") -> list[NodeSpec]:
    """Parse an inventory document (YAML is a superset of JSON)."""
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
    specs = [_spec(i, entry) for i, entry in enumerate(entries)]
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
    return specs


_NIC_KEYS = {"mac", "extra", "pxe_enabled", "physical_network"}


def _nic(where: str, entry: object) -> NicSpec:
    """One entry of a node's ``nics`` (bifrost: ``{mac: ...}``)."""
    if not isinstance(entry, dict):
        raise InventoryError(f"{where}: each of nics must be a mapping")
    unknown = set(entry) - _NIC_KEYS
    if unknown:
        raise InventoryError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))} in nics")
    address = schemas.normalize_mac(entry.get("mac"))
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


def _spec(index: int, entry: object) -> NodeSpec:
    if not isinstance(entry, dict):
        raise InventoryError(f"entry {index}: expected a mapping")
    name = entry.get("name")
    where = str(name) if name is not None else f"entry {index}"
    problem = storable.value_problem(entry)
    if problem:
        raise InventoryError(f"{where!r}: invalid value: {problem}")
    if not schemas.is_valid_name(name) or schemas.is_uuid_like(str(name)):
        raise InventoryError(f"{where}: invalid node name {name!r}")
    unknown = set(entry) - _KNOWN - _IGNORED
    if unknown:
        raise InventoryError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}"
        )
    driver = entry.get("driver", DRIVER)
    if driver != DRIVER:
        raise InventoryError(
            f"{where}: driver {driver!r} is not supported (only {DRIVER})"
        )
    uuid = entry.get("uuid") or str(uuidlib.uuid4())
    if not schemas.is_uuid(uuid):
        raise InventoryError(f"{where}: invalid uuid {uuid!r}")
    uuid = schemas.canonical_uuid(uuid)  # as the API stores them
    rc = _optional_str(where, "resource_class", entry.get("resource_class"))
    if rc is not None and len(rc) > schemas.RESOURCE_CLASS_MAX:
        raise InventoryError(f"{where}: resource_class is too long")
    traits = entry.get("traits") or []
    if not isinstance(traits, list):
        raise InventoryError(f"{where}: traits must be a list")
    bad = [t for t in traits if not schemas.is_valid_trait(t)]
    if bad:
        raise InventoryError(
            f"{where}: {bad[0]!r} is neither a standard (os-traits) nor a "
            f"CUSTOM_ trait"
        )
    return NodeSpec(
        name=str(name),
        uuid=uuid,
        resource_class=rc,
        traits=tuple(sorted(set(traits))),
        properties=_mapping(where, "properties", entry.get("properties")),
        owner=_optional_str(where, "owner", entry.get("owner")),
        lessee=_optional_str(where, "lessee", entry.get("lessee")),
        description=_optional_str(
            where, "description", entry.get("description")
        ),
        extra=_mapping(where, "extra", entry.get("extra")),
        driver_info=_mapping(where, "driver_info", entry.get("driver_info")),
        nics=_nics(where, entry.get("nics")),
        conductor_group=(_optional_str(
            where, "conductor_group", entry.get("conductor_group")
        ) or "").lower(),
        shard=_optional_str(where, "shard", entry.get("shard")),
    )


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
            if queries.node_by_ident(session, spec.uuid, by_uuid=True):
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
                instance_info={},
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
            queries.replace_traits(session, node.id, spec.traits)
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
