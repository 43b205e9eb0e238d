"""How a node looks in Placement, and why it may not be allocated: pure rules.

A node is one resource provider (UUID = node UUID, name = node name or
its UUID) with an inventory of one unit of its resource class, normalised
like Nova (``CUSTOM_`` + upper case, runs of other characters to ``_``).
A node that exists but cannot be allocated keeps that inventory with
``reserved = total`` (Placement microversion 1.26) instead of losing it,
so capacity stays visible.  A node holding an allocation is never
reserved: the allocation's claim already consumes the unit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from baremetal_allocclient.server import node_states as ns

#: Every provider this server manages carries this trait, so a full
#: reconciliation can find (and remove) providers of deleted nodes without
#: touching anybody else's providers in a shared Placement.
MANAGED_TRAIT: Final = "CUSTOM_BAREMETAL_ALLOCCLIENT"

# Reasons a node without an allocation cannot be allocated, in the order
# they are reported (the first that applies wins).
MAINTENANCE: Final = "maintenance"
POWER_UNKNOWN: Final = "power_unknown"
NOT_AVAILABLE: Final = "not_available"
ASSOCIATED: Final = "associated"
REASONS: Final = (MAINTENANCE, POWER_UNKNOWN, NOT_AVAILABLE, ASSOCIATED)

_NON_ALNUM = re.compile(r"[^0-9A-Z]+")


def normalize_resource_class(name: str) -> str:
    """Nova's normalisation of an Ironic resource class."""
    return "CUSTOM_" + _NON_ALNUM.sub("_", name.upper())


@dataclass(frozen=True)
class NodeFacts:
    """The node columns that decide its provider and its capacity."""

    uuid: str
    name: str | None
    resource_class: str | None
    provision_state: str
    maintenance: bool
    power_state: str | None
    instance_uuid: str | None
    allocation_uuid: str | None
    owner: str | None = None
    lessee: str | None = None
    traits: frozenset[str] = field(default_factory=frozenset)
    #: A child node (API 1.83) is never allocated, like in Ironic.
    parent_node: str | None = None


def unusable_reason(node: NodeFacts) -> str | None:
    """Why a node without an allocation cannot be allocated now."""
    if node.maintenance:
        return MAINTENANCE
    if node.power_state is None:
        return POWER_UNKNOWN
    if node.provision_state != ns.AVAILABLE or node.parent_node is not None:
        return NOT_AVAILABLE
    if node.instance_uuid is not None:
        return ASSOCIATED
    return None


@dataclass(frozen=True)
class ProviderState:
    """What Placement should hold for one node."""

    uuid: str
    name: str
    resource_class: str | None  # normalised; None: no inventory
    reserved: bool
    traits: frozenset[str]

    def inventories(self) -> dict[str, dict[str, Any]]:
        """The inventories document for PUT .../inventories."""
        if self.resource_class is None:
            return {}
        return {
            self.resource_class: {
                "total": 1,
                "reserved": 1 if self.reserved else 0,
                "min_unit": 1,
                "max_unit": 1,
                "step_size": 1,
                "allocation_ratio": 1.0,
            }
        }


def desired_provider(node: NodeFacts) -> ProviderState:
    """The provider a node should have."""
    reserved = node.allocation_uuid is None and (
        unusable_reason(node) is not None
    )
    rc = (
        normalize_resource_class(node.resource_class)
        if node.resource_class else None
    )
    return ProviderState(
        uuid=node.uuid,
        name=node.name or node.uuid,
        resource_class=rc,
        reserved=reserved,
        traits=frozenset(node.traits) | {MANAGED_TRAIT},
    )


def provider_matches(
    want: ProviderState,
    name: str,
    inventories: Mapping[str, Mapping[str, Any]],
    traits: Iterable[str],
) -> tuple[bool, bool, bool]:
    """Whether Placement's (name, inventories, traits) already match."""
    name_ok = name == want.name
    expected = want.inventories()
    inv_ok = set(inventories) == set(expected) and all(
        int(inventories[rc].get("total", -1)) == inv["total"]
        and int(inventories[rc].get("reserved", -1)) == inv["reserved"]
        for rc, inv in expected.items()
    )
    traits_ok = set(traits) == set(want.traits)
    return name_ok, inv_ok, traits_ok


@dataclass
class CapacityRow:
    """Capacity of one resource class, as the operator reads it."""

    resource_class: str
    total: int = 0
    allocated: int = 0
    free: int = 0
    reserved: int = 0
    reserved_by_reason: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The API representation."""
        return {
            "resource_class": self.resource_class,
            "total": self.total,
            "allocated": self.allocated,
            "reserved": self.reserved,
            "reserved_by_reason": dict(sorted(
                self.reserved_by_reason.items()
            )),
            "free": self.free,
        }


def capacity(
    nodes: Iterable[NodeFacts], resource_class: str | None = None
) -> list[CapacityRow]:
    """Per resource class: total, allocated, reserved (by reason), free.

    A node is *allocated* when it holds an allocation; otherwise it is
    reserved for the first reason that applies, or free.  Nodes without a
    resource class are not counted (nothing can ask for them).
    """
    rows: dict[str, CapacityRow] = {}
    for node in nodes:
        rc = node.resource_class
        if not rc or (resource_class is not None and rc != resource_class):
            continue
        row = rows.setdefault(rc, CapacityRow(rc))
        row.total += 1
        if node.allocation_uuid is not None:
            row.allocated += 1
            continue
        reason = unusable_reason(node)
        if reason is None:
            row.free += 1
        else:
            row.reserved += 1
            row.reserved_by_reason[reason] = (
                row.reserved_by_reason.get(reason, 0) + 1
            )
    return [rows[rc] for rc in sorted(rows)]
