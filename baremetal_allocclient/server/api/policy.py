"""Project scoping: what a project member may see and do.

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

from typing import Any

from sqlalchemy import ColumnElement, or_

from baremetal_allocclient.server.api.auth import Principal, principal_of
from baremetal_allocclient.server.api.errors import ApiError
from baremetal_allocclient.server.db.models import Node


def principal(ctx: Any) -> Principal:
    """The principal of a handler's request context."""
    return principal_of(ctx.request.environ)


def allocation_visible(who: Principal, owner: str | None) -> bool:
    """May ``who`` see an allocation with this owner (pure)."""
    return who.admin or (owner is not None and owner == who.project)


def node_visible(
    who: Principal, owner: str | None, lessee: str | None
) -> bool:
    """May ``who`` see a node with this owner and lessee (pure)."""
    return who.admin or (
        who.project is not None and who.project in (owner, lessee)
    )


def list_owner(who: Principal, requested: str | None) -> str | None:
    """The owner filter of an allocation list: forced for members.

    A member asking for another project's allocations gets a 403 (Ironic).
    """
    if who.admin:
        return requested
    if requested is not None and requested != who.project:
        raise ApiError(403, "Not authorized to list allocations of "
                            "another project.")
    return who.project


def create_owner(who: Principal, requested: str | None) -> str | None:
    """The owner stored on a new allocation; a foreign one is a 403."""
    if who.admin:
        return requested
    if requested and requested != who.project:
        raise ApiError(
            403,
            f"Cannot create an allocation with owner {requested}: it does "
            f"not match the requester's project {who.project}.",
        )
    return who.project


def node_filter(who: Principal) -> ColumnElement[bool] | None:
    """A WHERE clause restricting nodes to visible ones; None for admins."""
    if who.admin:
        return None
    return or_(Node.owner == who.project, Node.lessee == who.project)
