"""When an allocation may be removed from its node: pure rules."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from baremetal_allocclient.server import node_states as ns


@dataclass(frozen=True)
class NodeView:
    """The node facts the release rules look at."""

    uuid: str
    provision_state: str
    target_provision_state: str | None
    maintenance: bool


class Holder(Protocol):
    """A service that holds the nodes and decides reservations made
    outside the server's own selection (Ironic, behind the broker):
    asked before the server commits its own change."""

    def release(self, allocation_uuid: str, holds_node: bool) -> None:
        """Free the allocation's node there, or raise the domain error
        saying why not (``Conflict``, or ``Busy`` while it is
        unreachable); asked instead of :func:`allocation_removal_error`."""

    def refresh_node(self, ident: str) -> None:
        """Read the node's facts again from the holder (before checking
        a backfill against them)."""

    def backfill(self, allocation_uuid: str, node_uuid: str,
                 resource_class: str | None, traits: list[str],
                 owner: str | None) -> None:
        """Record an allocation of a deployed node there, or raise the
        domain error saying why not."""

    def claim_all(self, claims: Sequence[tuple[str, str]],
                  resource_class: str, traits: Sequence[str],
                  owner: str | None) -> bool:
        """Claim each (allocation UUID, node UUID) there, all or none:
        False, with none left, when one is refused."""

    def unclaim_all(self, allocation_uuids: Sequence[str]) -> None:
        """Remove claims :meth:`claim_all` made (the server did not
        commit them)."""


def allocation_removal_error(
    node: NodeView, allocation_uuid: str
) -> str | None:
    """Why deleting the allocation must be refused (409), None if allowed.

    Maintenance mode always allows it.  Otherwise a node in the middle of
    an operation that forbids updates, or an active node, keeps it.
    """
    if node.maintenance:
        return None
    if (
        node.target_provision_state
        and node.provision_state not in ns.UPDATE_ALLOWED
    ):
        return (
            f"Cannot remove allocation {allocation_uuid} for node "
            f"{node.uuid}, because the node is in state "
            f"{node.provision_state} where updates are not allowed (and "
            f"maintenance mode is off)"
        )
    if node.provision_state == ns.ACTIVE:
        return (
            f"Cannot remove allocation {allocation_uuid} for node "
            f"{node.uuid}, because the node is active (and maintenance "
            f"mode is off)"
        )
    return None


def instance_uuid_removal_error(node: NodeView) -> str | None:
    """Why a PATCH removing instance_uuid of an allocated node is a 409."""
    if node.maintenance or node.provision_state in ns.CHANGE_ALLOWED:
        return None
    return (
        f"Node {node.uuid} with an allocation can not have instance_uuid "
        f"removed unless it is in one of allowed "
        f"({', '.join(ns.CHANGE_ALLOWED)}) states or in maintenance mode. "
        f"Current state is '{node.provision_state}'."
    )


def node_deletion_error(
    node: NodeView, instance_uuid: str | None
) -> str | None:
    """Why deleting the node must be refused (409), None if allowed.

    A node in maintenance may be deleted with its allocation; otherwise an
    associated node, or one in a busy state, stays.  (A protected node is
    refused before, with a 403.)
    """
    if node.maintenance:
        return None
    if instance_uuid:
        return f"Node {node.uuid} is associated with instance {instance_uuid}."
    if node.provision_state not in ns.DELETE_ALLOWED:
        allowed = "('manageable', 'enroll', 'adopt failed', 'available')"
        return (
            f'Can not delete node "{node.uuid}" while it is in provision '
            f'state "{node.provision_state}". Valid provision states to '
            f'perform deletion are: "{allowed}", or set the node into '
            f"maintenance mode"
        )
    return None
