"""Per-request context handed to every handler, and resource lookups."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from sqlalchemy.engine import Connection, Row
from sqlalchemy.orm import Session
from werkzeug.wrappers import Request, Response

from baremetal_allocclient.server.allocation import release
from baremetal_allocclient.server.allocation.backends.base import Backend
from baremetal_allocclient.server.allocation.queueing import QueueRounds
from baremetal_allocclient.server.allocation.workers import AllocationWorkers
from baremetal_allocclient.server.api import (
    limits,
    policy,
    prefer,
    schemas,
    storable,
    versions,
    views,
)
from baremetal_allocclient.server.api.errors import (
    ApiError,
    not_found,
)
from baremetal_allocclient.server.api.node_lookup import (
    NodeScope,
    visible,
    visible_node,
)
from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Allocation, Node
from baremetal_allocclient.server.ironic.fake_hardware import FakeHardware


@dataclass(frozen=True)
class Services:
    """Long-lived objects shared by all requests."""

    db: Database
    workers: AllocationWorkers
    hardware: FakeHardware
    conductor: str
    backend: Backend | None = None  # None: the database backend
    #: Ceiling of ``Prefer: wait`` on POST /v1/allocations, in seconds.
    max_prefer_wait: float = prefer.DEFAULT_MAX_WAIT
    #: Request threads ``Prefer: wait`` may hold at once.
    waiting: prefer.WaitPermits = field(
        default_factory=lambda: prefer.WaitPermits(
            prefer.waiting_capacity(prefer.DEFAULT_THREADS)
        )
    )
    #: Seconds between lease expiry rounds (``serve --expire-leases``);
    #: 0: this process does not expire leases.
    lease_expiry: float = 0.0
    #: Whether expiry tears deployed nodes down (``--expire-leases-undeploy``).
    lease_undeploy: bool = False
    #: Waiting in line (the queue extension); None: not offered (the
    #: Placement backend).
    queue: QueueRounds | None = None


@dataclass(frozen=True)
class Context:
    """One request: its version, its base URL and the services."""

    request: Request
    version: versions.Version
    base_url: str
    services: Services

    @property
    def minor(self) -> int:
        """The requested minor version (major is always 1)."""
        return self.version.minor

    def json_body(self) -> Any:
        """The decoded JSON body; malformed JSON is a 400, not a 500."""
        raw = self.request.get_data(cache=True)
        limit = self.request.max_content_length
        if limit is not None and len(raw) >= limit and (
            self.request.content_length is None
        ):
            # A chunked body is cut at the limit rather than refused.
            raise ApiError(413, f"Request body is too large (at most "
                                f"{limit} bytes)")
        if not raw.strip():
            return None
        limits.check_json_depth(raw)
        return storable.loads(raw)

    def query(self, name: str) -> str | None:
        """A query parameter (last one wins), None when absent."""
        values = self.request.args.getlist(name)
        return values[-1] if values else None


def json_response(body: object, status: int = 200) -> Response:
    """A JSON response."""
    return Response(
        json.dumps(body), status=status, content_type="application/json"
    )


def empty_response(status: int) -> Response:
    """A response without a body (202, 204)."""
    response = Response(status=status)
    response.headers.pop("Content-Type", None)
    return response


def node_scope(ctx: Context) -> NodeScope:
    """Who the request is from, and whether its version lets it name a
    node (from 1.5): what finding a node needs of the request."""
    return NodeScope(who=policy.principal(ctx),
                     names=ctx.minor >= versions.NODE_NAME)


def find_node(ctx: Context, session: Session, ident: str) -> Node:
    """A node by UUID or (from 1.5) name; 404 when missing."""
    return visible_node(session, node_scope(ctx), ident)


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
    conn: Connection, ident: str, ctx: Context
) -> tuple[Row[Any], str | None]:
    """Like :func:`find_allocation`, for answering a read: the
    allocation's row (no ORM object) and its node's UUID, in one
    query."""
    ident = schemas.canonical_uuid(ident)
    row = lookups.allocation_for_reading(
        conn, ident, by_uuid=schemas.is_uuid_like(ident)
    )
    visible_allocation(
        None if row is None else cast(views.AllocationRecord, row),
        ident, ctx)
    assert row is not None
    return row, row.node_uuid


_Found = TypeVar("_Found", bound=views.AllocationRecord)


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
