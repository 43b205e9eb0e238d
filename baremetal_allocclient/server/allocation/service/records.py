"""Reading, listing and renaming allocations, and the funnel and
capacity figures.  Every function opens its own transaction (its first
argument is the ``Database`` or the backend); the rows it returns are
not tied to a session, ready to render.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import and_, bindparam
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session

from baremetal_allocclient import leases
from baremetal_allocclient.constraints import (
    EXPLAIN_FIRST,
    Constraints,
    Funnel,
    Order,
    order_document,
)
from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.allocation import (
    lookup,
    marks,
    matching,
    selection,
)
from baremetal_allocclient.server.allocation.backends.base import Backend
from baremetal_allocclient.server.allocation.selection import Request
from baremetal_allocclient.server.allocation.service import creating
from baremetal_allocclient.server.db import lookups, node_lookup, paging
from baremetal_allocclient.server.db.commit_hooks import on_commit
from baremetal_allocclient.server.db.driver_statements import (
    DriverStatement,
)
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Allocation, utcnow
from baremetal_allocclient.server.domain import identifiers, patching, policy
from baremetal_allocclient.server.domain.errors import (
    Conflict,
    Invalid,
)
from baremetal_allocclient.server.domain.paging import Page
from baremetal_allocclient.server.domain.policy import NodeScope
from baremetal_allocclient.server.domain.principal import Principal
from baremetal_allocclient.server.domain.recording import (
    NOT_RECORDED,
    Change,
    Recorder,
)

_Read = TypeVar("_Read")


@dataclass(frozen=True)
class Listing:
    """What ``GET /v1/allocations`` asks for (parsed and checked)."""

    page: Page
    owner: str | None
    state: str | None
    resource_class: str | None
    #: The ``node`` filter: a node's UUID or name (400 when it is missing
    #: or hidden, as in Ironic).
    node: str | None
    #: The ``marker``: the UUID of the allocation the page starts after.
    marker: str | None
    #: Whether the rows also have the extensions' columns
    #: (``lookups.MARK_COLUMNS``, after the node's UUID).
    marks: bool = False


def list_page(db: Database, who: Principal,
              asked: Listing) -> list[tuple[Any, ...]]:
    """One page of the allocations ``who`` may see (a member asking for
    another project's owner is :class:`Forbidden`): their rows as the
    driver's tuples, in the order of :data:`~baremetal_allocclient.
    server.db.lookups.ALLOCATION_VIEW_COLUMNS` then the node's UUID.

    The page is one statement (compiled once per shape of request, see
    :func:`_page_read`) on a :meth:`Database.statement_connection` (no
    ``BEGIN``): the ``node`` filter and the ``marker`` are found in a
    read transaction of their own before it, as no snapshot needs
    sharing (a marker only says where the page starts)."""
    page = asked.page
    values: dict[str, Any] = {"limit": page.limit}
    for name, value in (("state", asked.state),
                        ("resource_class", asked.resource_class),
                        ("owner", policy.list_owner(who, asked.owner))):
        if value is not None:
            values[name] = value
    marker = None
    if asked.node is not None or asked.marker is not None:
        with db.read() as session:
            if asked.node is not None:
                values["node_id"] = lookup.node_as_filter_argument(
                    session, asked.node, who).id
            if asked.marker is not None:
                marker_row = lookup.find_allocation(session, asked.marker,
                                                    who)
                values["marker_id"] = marker_row.id
                values["marker_key"] = getattr(marker_row, page.sort_key)
                marker = "null" if values["marker_key"] is None else "value"
    filters = tuple(name for name in _PAGE_FILTERS if name in values)
    with db.statement_connection() as conn:
        read = _page_read(conn.dialect, filters, page.sort_key,
                          page.sort_dir, marker, asked.marks)
        return read.rows(conn, values)


#: The filters of a page: the column of each equals the bind parameter
#: of its name.
_PAGE_FILTERS = ("node_id", "state", "resource_class", "owner")


@functools.lru_cache(maxsize=256)
def _page_read(dialect: Dialect, filters: tuple[str, ...], sort_key: str,
               sort_dir: str, marker: str | None,
               marks: bool = False) -> DriverStatement:
    """The statement of a page of this shape, compiled for ``dialect``:
    ``filters`` and, after a marker (``marker``: ``"value"``, or
    ``"null"`` when its sort value is NULL), the bind parameters
    ``marker_key`` and ``marker_id``; at most ``limit`` rows."""
    column = getattr(Allocation, sort_key)
    query = lookups.allocation_rows(marks)
    for name in filters:
        query = query.where(getattr(Allocation, name) == bindparam(name))
    after: tuple[Any, Any] | None = None if marker is None else (
        None if marker == "null"
        else bindparam("marker_key", type_=column.type),
        bindparam("marker_id"))
    query = paging.ordered_after(query, sort_dir, column, Allocation.id,
                                  after)
    return DriverStatement(query.limit(bindparam("limit")), dialect)


def read(db: Database, ident: str, who: Principal
         ) -> tuple[Any, str | None]:
    """The row of the allocation ``ident`` names, as ``who`` may see it,
    and its node's UUID: one statement on a bare connection."""
    with db.statement_connection() as conn:
        return lookup.read_allocation(conn, ident, who)


def node_allocation(db: Database, scope: NodeScope, node_ident: str
                    ) -> tuple[Allocation, str | None]:
    """The allocation of the node ``node_ident`` names, as ``scope`` may
    see them (:func:`.lookup.node_and_allocation`), and the node's UUID."""
    with db.read() as session:
        node, allocation = lookup.node_and_allocation(
            session, scope, node_ident)
        return allocation, node.uuid


def update(db: Database, ident: str, who: Principal,
           patch: list[dict[str, Any]],
           recorder: Recorder = NOT_RECORDED, lease: bool = False
           ) -> tuple[Allocation, str | None]:
    """Apply a JSON patch of ``name`` and ``extra`` (and, with
    ``lease``, of the leases extension's ``lease`` field; checked by the
    caller) to the allocation ``ident`` names, as ``who`` may see it;
    it and its node's UUID.  A change of the lease's end is counted as
    a renewal."""
    with db.write() as session:
        allocation = lookup.find_allocation(session, ident, who)
        current: dict[str, Any] = {"name": allocation.name,
                                   "extra": allocation.extra or {}}
        if lease:
            current["lease"] = marks.lease_document(
                allocation.lease_expires_at, allocation.lease_duration)
        patched = patching.apply(current, patch)
        schemas.validate(patched, schemas.allocation_patched(lease))
        name = patched.get("name")
        if name is not None and not identifiers.is_valid_name(name):
            raise Invalid(
                f"Cannot update allocation with invalid name '{name}'"
            )
        if name is not None and name != allocation.name:
            other = lookups.allocation_by_ident(
                session, name, by_uuid=False, lock=False
            )
            if other is not None:
                raise Conflict(
                    f"An allocation with name {name} already exists."
                )
        allocation.name = name
        extra = patched.get("extra") or {}
        if lease and patched.get("lease") != current["lease"]:
            _set_lease(session, recorder, allocation, patched.get("lease"))
        else:
            _lease_written_in_extra(session, recorder, allocation,
                                    current["extra"], extra)
        fields = tuple(field for field, value in (("name", name),
                                                  ("extra", extra))
                       if value != current[field])
        if fields:
            change = Change(allocation.uuid, allocation.owner,
                            allocation.state, allocation.state,
                            None, "request", fields)
            on_commit(session, lambda: recorder.changed(change))
        allocation.extra = extra
        allocation.updated_at = utcnow()
        session.flush()
        return allocation, _node_uuid(session, allocation)


def _set_lease(session: Session, recorder: Recorder, allocation: Allocation,
               document: dict[str, Any] | None) -> None:
    """Store a patched ``lease``; moving an end is a renewal."""
    columns = marks.lease_columns(document, utcnow())
    before = allocation.lease_expires_at
    after = columns["lease_expires_at"]
    if None not in (before, after) and before != after:
        on_commit(session, recorder.lease_renewed)
    allocation.lease_expires_at = after
    allocation.lease_duration = columns["lease_duration"]


def _lease_written_in_extra(session: Session, recorder: Recorder,
                            allocation: Allocation, before: dict[str, Any],
                            after: dict[str, Any]) -> None:
    """A lease an older client renewed by patching the keys of ``extra``
    (:func:`marks.written_lease`): the lease moves with them."""
    keys = (leases.EXPIRES_KEY, leases.DURATION_KEY)
    if all(before.get(key) == after.get(key) for key in keys):
        return
    columns = marks.written_lease(after)
    if columns is None:
        return
    if allocation.lease_expires_at not in (None,
                                           columns["lease_expires_at"]):
        on_commit(session, recorder.lease_renewed)
    allocation.lease_expires_at = columns["lease_expires_at"]
    allocation.lease_duration = columns["lease_duration"]


def _node_uuid(session: Session, allocation: Allocation) -> str | None:
    if allocation.node_id is None:
        return None
    return lookups.node_uuid(session, allocation.node_id)


def funnel(db: Database, who: Principal, request: Request,
           candidate_nodes: Sequence[str]) -> tuple[Request, Funnel]:
    """The funnel of ``request`` (its owner as ``who`` may set it, its
    ``candidate_nodes`` resolved here), counting the nodes ``who`` may
    see, or for an admin the nodes the request's owner may see."""
    owner = policy.create_owner(who, request.owner)
    with db.read() as session:
        candidates = creating.resolve_candidates(session, who,
                                                 candidate_nodes)
        request = dataclasses.replace(
            request, owner=owner, candidate_nodes=tuple(candidates))
        visible = node_lookup.node_filter(who)
        if visible is None:  # an admin: the nodes the owner may see
            visible = matching.visible_to(request.owner)
        return request, matching.funnel_counts(session, request, visible)


def order_entry(db: Database, request: Request, default: Order
                ) -> dict[str, Any]:
    """``explain``'s ``order``: the request's order (or ``default``)
    and, for best fit, the first nodes it would try with their excess
    (the same query a create runs)."""
    order = request.constraints.order or default
    ranked: list[tuple[str, float]] = []
    if order is Order.BEST_FIT:
        with db.read() as session:
            rows = matching.best_fit_rows(
                session, request, selection.active_filters(request),
                EXPLAIN_FIRST)
        ranked = [(name or uuid, excess) for _i, name, uuid, excess in rows]
    return order_document(order, request.constraints, ranked)


def capacity(backend: Backend, who: Principal, resource_class: str | None,
             wanted: Constraints | None) -> Sequence[dict[str, Any]]:
    """Capacity per resource class of the nodes ``who`` may see that
    satisfy ``wanted``."""
    condition = None if wanted is None else \
        matching.constraint_condition(wanted)
    visible = [c for c in (node_lookup.node_filter(who), condition)
               if c is not None]
    return backend.capacity(resource_class, and_(*visible) if visible
                            else None)
