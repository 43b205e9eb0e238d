"""Finding the allocation (or the node) a request names, as its
principal may see it, in the caller's transaction.

The allocation wing's handlers hand these to the service layer as
closures (``records.Listing``, ``releasing.delete`` ...), so the lookup
runs in the transaction the service opens.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

from sqlalchemy.orm import Session

from baremetal_allocclient.server.allocation import release
from baremetal_allocclient.server.allocation.views import AllocationRecord
from baremetal_allocclient.server.api import policy, schemas
from baremetal_allocclient.server.api.context import Context
from baremetal_allocclient.server.api.errors import ApiError, not_found
from baremetal_allocclient.server.api.node_lookup import visible
from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.driver_statements import AnyConnection
from baremetal_allocclient.server.db.models import Allocation, Node


def find_allocation(
    session: Session, ident: str, ctx: Context | None = None
) -> Allocation:
    """An allocation by UUID or name; 404 when missing.

    With ``ctx``, one its principal may not see is missing too.
    """
    ident = schemas.canonical_uuid(ident)
    allocation = lookups.allocation_by_ident(
        session, ident, by_uuid=schemas.is_uuid_like(ident)
    )
    return visible_allocation(allocation, ident, ctx)


def allocation_to_release(
    session: Session, ident: str, ctx: Context
) -> Allocation:
    """Like :func:`find_allocation`, with its node locked first (the one
    lock order), ready to be released."""
    ident = schemas.canonical_uuid(ident)
    allocation = release.allocation_for_release(
        session, ident, by_uuid=schemas.is_uuid_like(ident)
    )
    return visible_allocation(allocation, ident, ctx)


def read_allocation(
    conn: AnyConnection, ident: str, ctx: Context
) -> tuple[Any, str | None]:
    """Like :func:`find_allocation`, for answering a read: the
    allocation's row (no ORM object) and its node's UUID, in one
    query."""
    ident = schemas.canonical_uuid(ident)
    row = lookups.allocation_for_reading(
        conn, ident, by_uuid=schemas.is_uuid_like(ident)
    )
    visible_allocation(
        None if row is None else cast(AllocationRecord, row),
        ident, ctx)
    assert row is not None
    return row, row.node_uuid


_Found = TypeVar("_Found", bound=AllocationRecord)


def visible_allocation(
    allocation: _Found | None, ident: str, ctx: Context | None
) -> _Found:
    """The allocation if it exists and ``ctx``'s principal may see it;
    404 otherwise."""
    if allocation is None or (
        ctx is not None
        and not policy.allocation_visible(
            policy.principal(ctx), allocation.owner
        )
    ):
        raise not_found(f"Allocation {ident} could not be found.")
    return allocation


def node_as_filter_argument(
    ctx: Context, session: Session, ident: str
) -> Node:
    """A node named in a query or body: missing (or hidden) is a 400."""
    ident = schemas.canonical_uuid(ident)
    node = lookups.node_by_ident(
        session, ident, by_uuid=schemas.is_uuid_like(ident), lock=False
    )
    if node is None or not visible(policy.principal(ctx), node):
        raise ApiError(400, f"Node {ident} could not be found.")
    return node
