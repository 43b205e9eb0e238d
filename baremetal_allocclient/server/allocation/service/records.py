"""Reading, listing and renaming allocations, and the funnel and
capacity figures.  Every function opens its own transaction (its first
argument is the ``Database`` or the backend); the rows it returns are
not tied to a session, ready to render.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import and_
from sqlalchemy.engine import Connection, Row
from sqlalchemy.orm import Session

from baremetal_allocclient.constraints import Constraints, Funnel
from baremetal_allocclient.server.allocation import matching
from baremetal_allocclient.server.allocation.backends.base import Backend
from baremetal_allocclient.server.allocation.selection import Request
from baremetal_allocclient.server.allocation.service import creating
from baremetal_allocclient.server.api import listing, patching, policy, schemas
from baremetal_allocclient.server.api.auth import Principal
from baremetal_allocclient.server.api.errors import bad_request, conflict
from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Allocation, Node, utcnow

_Read = TypeVar("_Read")


@dataclass(frozen=True)
class Listing:
    """What ``GET /v1/allocations`` asks for (parsed and checked)."""

    page: listing.Page
    owner: str | None
    state: str | None
    resource_class: str | None
    #: The ``node`` filter: the node, found in the listing's transaction.
    node: Callable[[Session], Node] | None
    #: The ``marker``: the allocation, found in the same transaction.
    marker: Callable[[Session], Allocation] | None


def list_page(db: Database, asked: Listing) -> Sequence[Row[Any]]:
    """One page of allocations: their rows (no ORM objects), each with
    its node's UUID in ``node_uuid``.

    The page is one statement on a :meth:`Database.statement_connection`
    (no ``BEGIN``): the ``node`` filter and the ``marker`` are found in
    statements of their own before it, as no snapshot needs sharing (a
    marker only says where the page starts)."""
    page = asked.page
    with db.statement_connection() as conn:
        query = lookups.allocation_rows()
        marker = None
        if asked.node is not None or asked.marker is not None:
            with Session(conn) as session:
                if asked.node is not None:
                    node = asked.node(session)
                    query = query.where(Allocation.node_id == node.id)
                if asked.marker is not None:
                    marker_row = asked.marker(session)
                    marker = (getattr(marker_row, page.sort_key),
                              marker_row.id)
        for column, value in (
            (Allocation.state, asked.state),
            (Allocation.resource_class, asked.resource_class),
            (Allocation.owner, asked.owner),
        ):
            if value is not None:
                query = query.where(column == value)
        query = listing.order_and_page(
            query, page, getattr(Allocation, page.sort_key), Allocation.id,
            marker)
        return conn.execute(query).all()


def read(db: Database, find: Callable[[Connection], _Read]) -> _Read:
    """What ``find`` reads in one statement on a bare connection (an
    allocation's row and its node's UUID)."""
    with db.statement_connection() as conn:
        return find(conn)


def node_allocation(db: Database, find: Callable[[Session], Allocation]
                    ) -> tuple[Allocation, str | None]:
    """The allocation ``find`` returns (through a node) and its node's
    UUID."""
    with db.read() as session:
        allocation = find(session)
        return allocation, _node_uuid(session, allocation)


def update(db: Database, find: Callable[[Session], Allocation],
           patch: list[dict[str, Any]]) -> tuple[Allocation, str | None]:
    """Apply a JSON patch of ``name`` and ``extra`` (checked by the
    caller) to the allocation ``find`` locks; it and its node's UUID."""
    with db.write() as session:
        allocation = find(session)
        current = {"name": allocation.name, "extra": allocation.extra or {}}
        patched = patching.apply(current, patch)
        schemas.validate(patched, schemas.ALLOCATION_PATCHED)
        name = patched.get("name")
        if name is not None and not schemas.is_valid_name(name):
            raise bad_request(
                f"Cannot update allocation with invalid name '{name}'"
            )
        if name is not None and name != allocation.name:
            other = lookups.allocation_by_ident(
                session, name, by_uuid=False, lock=False
            )
            if other is not None:
                raise conflict(
                    f"An allocation with name {name} already exists."
                )
        allocation.name = name
        allocation.extra = patched.get("extra") or {}
        allocation.updated_at = utcnow()
        session.flush()
        return allocation, _node_uuid(session, allocation)


def _node_uuid(session: Session, allocation: Allocation) -> str | None:
    if allocation.node_id is None:
        return None
    return lookups.node_uuid(session, allocation.node_id)


def funnel(db: Database, who: Principal, request: Request,
           candidate_nodes: Sequence[str]) -> tuple[Request, Funnel]:
    """The funnel of ``request`` (its ``candidate_nodes`` resolved here),
    counting the nodes ``who`` may see, or for an admin the nodes the
    request's owner may see."""
    with db.read() as session:
        candidates = creating.resolve_candidates(session, who,
                                                 candidate_nodes)
        request = dataclasses.replace(
            request, candidate_nodes=tuple(candidates))
        visible = policy.node_filter(who)
        if visible is None:  # an admin: the nodes the owner may see
            visible = matching.visible_to(request.owner)
        return request, matching.funnel_counts(session, request, visible)


def capacity(backend: Backend, who: Principal, resource_class: str | None,
             wanted: Constraints | None) -> Sequence[dict[str, Any]]:
    """Capacity per resource class of the nodes ``who`` may see that
    satisfy ``wanted``."""
    condition = None if wanted is None else \
        matching.constraint_condition(wanted)
    visible = [c for c in (policy.node_filter(who), condition)
               if c is not None]
    return backend.capacity(resource_class, and_(*visible) if visible
                            else None)
