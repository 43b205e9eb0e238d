"""Project scoping: what a project member may see and do (pure).

The rules follow Ironic's project-scoped policy at API 1.60, reduced to two
roles.  An admin (and everyone under ``noauth``) is unrestricted.  A member:

- sees only allocations whose owner is its project; any other allocation
  answers 404 as if it did not exist;
- creates allocations with its own project as owner (filled in when
  omitted); a foreign owner is a 403, as is a list filter on one;
- sees only nodes it owns or leases (others: 404, or 400 where a node is a
  request argument) and so is offered only those nodes, since selection
  matches an allocation's owner against node owner or lessee.
"""

from __future__ import annotations

from dataclasses import dataclass

from baremetal_allocclient.server.domain.errors import Forbidden
from baremetal_allocclient.server.domain.principal import Principal


@dataclass(frozen=True)
class NodeScope:
    """Who looks for nodes, and how they may name them."""

    who: Principal
    #: Whether a node may be named (API 1.5); else by UUID only.
    names: bool


def allocation_visible(who: Principal, owner: str | None) -> bool:
    """May ``who`` see an allocation with this owner."""
    return who.admin or (owner is not None and owner == who.project)


def node_visible(
    who: Principal, owner: str | None, lessee: str | None
) -> bool:
    """May ``who`` see a node with this owner and lessee."""
    return who.admin or (
        who.project is not None and who.project in (owner, lessee)
    )


def list_owner(who: Principal, requested: str | None) -> str | None:
    """The owner filter of an allocation list: forced for members.

    A member asking for another project's allocations is refused (Ironic).
    """
    if who.admin:
        return requested
    if requested is not None and requested != who.project:
        raise Forbidden("Not authorized to list allocations of another "
                        "project.")
    return who.project


def create_owner(who: Principal, requested: str | None) -> str | None:
    """The owner stored on a new allocation; a foreign one is refused."""
    if who.admin:
        return requested
    if requested and requested != who.project:
        raise Forbidden(
            f"Cannot create an allocation with owner {requested}: it does "
            f"not match the requester's project {who.project}.")
    return who.project
