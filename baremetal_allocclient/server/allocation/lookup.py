"""Finding the allocation (or the node) a request names, as its
principal may see it, in the caller's transaction.

The services call these with the identifier and the principal they were
given; a missing allocation, or one the principal may not see, is
:class:`~baremetal_allocclient.server.domain.errors.NotFound`.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from sqlalchemy.orm import Session

from baremetal_allocclient.server.allocation.release import freeing
from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.driver_statements import AnyConnection
from baremetal_allocclient.server.db.models import Allocation, Node
from baremetal_allocclient.server.db.node_lookup import visible, visible_node
from baremetal_allocclient.server.domain import identifiers, policy
from baremetal_allocclient.server.domain.errors import Invalid, NotFound
from baremetal_allocclient.server.domain.principal import Principal


def find_allocation(session: Session, ident: str,
                    who: Principal) -> Allocation:
    """An allocation by UUID or name, as ``who`` may see it."""
    ident = identifiers.canonical_uuid(ident)
    allocation = lookups.allocation_by_ident(
        session, ident, by_uuid=identifiers.is_uuid_like(ident)
    )
    return visible_allocation(allocation, ident, who)


def allocation_to_release(session: Session, ident: str,
                          who: Principal) -> freeing.ToRelease:
    """Like :func:`find_allocation`, with its node locked first (the one
    lock order) and read for the release rules: ready to be released."""
    ident = identifiers.canonical_uuid(ident)
    found = freeing.allocation_for_release(
        session, ident, by_uuid=identifiers.is_uuid_like(ident)
    )
    visible_allocation(None if found is None else found.allocation, ident,
                       who)
    assert found is not None
    return found


def read_allocation(conn: AnyConnection, ident: str,
                    who: Principal) -> tuple[Any, str | None]:
    """Like :func:`find_allocation`, for answering a read: the
    allocation's row (no ORM object) and its node's UUID, in one
    query."""
    ident = identifiers.canonical_uuid(ident)
    row = lookups.allocation_for_reading(
        conn, ident, by_uuid=identifiers.is_uuid_like(ident)
    )
    visible_allocation(row, ident, who)
    return row, row.node_uuid


class _Owned(Protocol):
    @property
    def owner(self) -> str | None: ...


_Found = TypeVar("_Found", bound=_Owned)


def visible_allocation(allocation: _Found | None, ident: str,
                       who: Principal) -> _Found:
    """The allocation (anything with an ``owner``) if it exists and
    ``who`` may see it; :class:`NotFound` otherwise."""
    if allocation is None or not policy.allocation_visible(
            who, allocation.owner):
        raise NotFound(f"Allocation {ident} could not be found.")
    return allocation


def node_as_filter_argument(session: Session, ident: str,
                            who: Principal) -> Node:
    """A node named in a query or body: missing (or hidden) is
    :class:`Invalid`, as in Ironic (a 400, not a 404)."""
    ident = identifiers.canonical_uuid(ident)
    node = lookups.node_by_ident(
        session, ident, by_uuid=identifiers.is_uuid_like(ident), lock=False
    )
    if node is None or not visible(who, node):
        raise Invalid(f"Node {ident} could not be found.")
    return node


def node_and_allocation(session: Session, scope: policy.NodeScope,
                        node_ident: str) -> tuple[Node, Allocation]:
    """The node ``node_ident`` names and the allocation holding it, as
    ``scope`` may see them, the node locked first in a write (the one
    lock order): :class:`Invalid` for a missing node, as in Ironic;
    :class:`NotFound` for one without a visible allocation."""
    try:
        node = visible_node(session, scope, node_ident)
    except NotFound as exc:
        raise Invalid(exc.message) from None
    allocation = freeing.holder_of(session, node)
    if allocation is None or not policy.allocation_visible(
            scope.who, allocation.owner):
        raise NotFound(f"Allocation for node {node_ident} was not found")
    return node, allocation
