"""``/v1/allocations`` and ``/v1/nodes/{node}/allocation``."""

from __future__ import annotations

import logging
import uuid as uuidlib
from collections.abc import Callable
from typing import Any

import jsonpatch
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from werkzeug.wrappers import Response

from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server.allocation import (
    commit_check,
    line,
    queue,
    release,
    release_rules,
    reservation,
)
from baremetal_allocclient.server.allocation.backends.base import Job
from baremetal_allocclient.server.allocation.states import (
    ACTIVE,
    ALLOCATING,
    ERROR,
)
from baremetal_allocclient.server.api import (
    extensions,
    listing,
    policy,
    prefer,
    schemas,
    versions,
    views,
)
from baremetal_allocclient.server.api.context import (
    Context,
    allocation_to_release,
    empty_response,
    find_allocation,
    find_node,
    json_response,
    node_as_filter_argument,
    read_allocation,
)
from baremetal_allocclient.server.api.errors import (
    ApiError,
    bad_request,
    conflict,
    no_route,
    not_acceptable,
    not_found,
)
from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.engine import (
    CommitOutcomeUnknown,
    is_unavailable,
    short_reason,
)
from baremetal_allocclient.server.db.models import (
    Allocation,
    Node,
    NodeTrait,
    utcnow,
)

LOG = logging.getLogger(__name__)
_NOT_ALLOWED = "The API version does not allow allocations"
_STATES = ("allocating", "active", "error")


def _gate(ctx: Context, status: int, minor: int = versions.ALLOCATIONS,
          message: str = _NOT_ALLOWED) -> None:
    if ctx.minor < minor:
        raise ApiError(status, message)


def _node_uuid(session: Session, allocation: Allocation) -> str | None:
    if allocation.node_id is None:
        return None
    return lookups.node_uuid(session, allocation.node_id)


def _render(
    ctx: Context,
    session: Session,
    allocation: Allocation,
    fields: list[str] | None = None,
) -> dict[str, Any]:
    return views.allocation_view(
        allocation, _node_uuid(session, allocation), ctx.base_url,
        ctx.minor, fields, extensions.constraints_requested(ctx),
    )


def list_allocations(ctx: Context) -> Response:
    """GET /v1/allocations with filters and pagination."""
    _gate(ctx, 404)
    owner = ctx.query("owner")
    if owner is not None and ctx.minor < versions.ALLOCATION_OWNER:
        raise not_acceptable()
    owner = policy.list_owner(policy.principal(ctx), owner)
    fields = listing.parse_fields(ctx.query("fields"))
    views.check_allocation_fields(fields, ctx.minor)
    page = listing.Page(
        limit=listing.parse_limit(ctx.query("limit")),
        sort_key=listing.parse_sort_key(
            ctx.query("sort_key"), views.ALLOCATION_SORT_KEYS
        ),
        sort_dir=listing.parse_sort_dir(ctx.query("sort_dir")),
    )
    marker_ident = ctx.query("marker")
    if marker_ident is not None and not schemas.is_uuid_like(marker_ident):
        raise bad_request(f"Schema error: '{marker_ident}' is not a 'uuid'")
    with ctx.services.db.read() as session:
        query = select(Allocation, Node.uuid).outerjoin(
            Node, Node.id == Allocation.node_id
        )
        node_ident = ctx.query("node")
        if node_ident is not None:
            node = node_as_filter_argument(ctx, session, node_ident)
            query = query.where(Allocation.node_id == node.id)
        for name, column in (
            ("state", Allocation.state),
            ("resource_class", Allocation.resource_class),
        ):
            value = ctx.query(name)
            if value is not None:
                query = query.where(column == value)
        if owner is not None:
            query = query.where(Allocation.owner == owner)
        column = getattr(Allocation, page.sort_key)
        marker = None
        if marker_ident is not None:
            marker_row = find_allocation(session, marker_ident, ctx)
            marker = (getattr(marker_row, page.sort_key), marker_row.id)
        query = listing.order_and_page(
            query, page, column, Allocation.id, marker
        )
        funnel = extensions.constraints_requested(ctx)
        rows: list[tuple[Allocation, str | None]] = [
            (row[0], row[1]) for row in session.execute(query)
        ]
        items = [
            views.allocation_view(a, node_uuid, ctx.base_url, ctx.minor,
                                  fields, funnel)
            for a, node_uuid in rows
        ]
    body: dict[str, Any] = {"allocations": items}
    last = rows[-1][0].uuid if rows else None
    link = listing.next_link(
        ctx.base_url, "allocations", dict(ctx.request.args), page,
        len(rows), last,
    )
    if link:
        body["next"] = link
    return json_response(body)


def get_allocation(ctx: Context, ident: str) -> Response:
    """GET /v1/allocations/{ident}."""
    _gate(ctx, 404)
    fields = listing.parse_fields(ctx.query("fields"))
    views.check_allocation_fields(fields, ctx.minor)
    with ctx.services.db.read() as session:
        allocation, node_uuid = read_allocation(session, ident, ctx)
    body = views.allocation_view(
        allocation, node_uuid, ctx.base_url, ctx.minor, fields,
        extensions.constraints_requested(ctx),
    )
    if fields is None:
        body = _with_queue(ctx, allocation, body)
    return json_response(body)


def _validated_create_body(ctx: Context) -> dict[str, Any]:
    body = ctx.json_body()
    if isinstance(body, dict) and "owner" in body and (
        ctx.minor < versions.ALLOCATION_OWNER
    ):
        raise not_acceptable()
    schemas.validate(body, schemas.allocation_create(
        ctx.version, extended=extensions.constraints_requested(ctx),
        queue=extensions.queue_requested(ctx)))
    assert isinstance(body, dict)
    owner = policy.create_owner(policy.principal(ctx), body.get("owner"))
    if owner is not None:
        body["owner"] = owner
    name = body.get("name")
    if name is not None and not schemas.is_valid_name(name):
        raise bad_request(
            f"Cannot create allocation with invalid name '{name}'"
        )
    uuid = body.get("uuid")
    if uuid is not None and not schemas.is_uuid(uuid):
        raise bad_request(f"Expected UUID for uuid: {uuid}")
    if uuid is not None:
        body["uuid"] = schemas.canonical_uuid(uuid)
    return body


def resolve_candidates(
    ctx: Context, session: Session, idents: list[str]
) -> list[str]:
    who = policy.principal(ctx)
    found: list[str] = []
    missing: list[str] = []
    for ident in map(schemas.canonical_uuid, idents):
        node = lookups.node_by_ident(
            session, ident, by_uuid=schemas.is_uuid_like(ident), lock=False
        )
        if node is None or not policy.node_visible(
            who, node.owner, node.lessee
        ):
            missing.append(ident)
        elif node.uuid not in found:
            found.append(node.uuid)
    if missing:
        raise bad_request(f"Nodes cannot be found: {', '.join(missing)}")
    return found


def _check_unique(
    session: Session, uuid: str | None, name: str | None
) -> None:
    """Clear 409s before an insert (``uuid`` None: generated here, a
    random UUID no row can hold; the unique index is the backstop)."""
    if uuid is not None and lookups.allocation_by_ident(
        session, uuid, by_uuid=True, lock=False
    ):
        raise conflict(f"An allocation with UUID {uuid} already exists.")
    if name is not None and lookups.allocation_by_ident(
        session, name, by_uuid=False, lock=False
    ):
        raise conflict(f"An allocation with name {name} already exists.")


def _duplicate(ctx: Context, uuid: str, name: str | None) -> ApiError:
    """The 409 for an insert the unique indexes refused, naming the
    clashing field (read only on this path, not before every insert)."""
    with ctx.services.db.read() as session:
        try:
            _check_unique(session, None, name)
        except ApiError as exc:
            return exc
    return conflict(f"An allocation with UUID {uuid} already exists.")


def create_allocation(ctx: Context) -> Response:
    """POST /v1/allocations: store ``allocating`` and hand to a worker.

    With ``Prefer: wait=N`` the answer waits up to N seconds (capped) for
    the allocation to settle (see ``AllocationWorkers.settle``), so it
    usually carries the settled allocation.
    """
    _gate(ctx, 405)
    body = _validated_create_body(ctx)
    now = utcnow()
    queue_deadline = extensions.queue_deadline(ctx, body, now)
    if body.get("node"):
        if body.get("constraints"):
            raise bad_request("Constraints do not apply to a backfill")
        return _backfill(ctx, body)
    wanted = extensions.parse_constraints(body)
    if not body.get("resource_class"):
        raise bad_request(
            "The resource_class field is mandatory when not backfilling"
        )
    given_uuid: str | None = body.get("uuid")
    uuid = given_uuid or str(uuidlib.uuid4())
    name = body.get("name")
    workers = ctx.services.workers
    if not workers.try_reserve_slot():
        raise ApiError(
            503,
            "The server is busy processing allocations, retry later",
        )
    stored = False
    try:
        with ctx.services.db.write() as session:
            candidates = resolve_candidates(
                ctx, session, list(body.get("candidate_nodes") or [])
            )
            # A duplicate name is left to the unique index: checking
            # first would cost every creation a query.
            _check_unique(session, given_uuid, None)
            allocation = Allocation(
                uuid=uuid,
                name=name,
                state=ALLOCATING,
                resource_class=body["resource_class"],
                traits=list(dict.fromkeys(body.get("traits") or [])),
                candidate_nodes=candidates,
                extra=body.get("extra") or {},
                owner=body.get("owner"),
                constraints=wanted.to_wire() if wanted else None,
                conductor_affinity=workers.affinity,
                queue_deadline=queue_deadline,
                created_at=now,
            )
            failed = _instance_in_use(session, given_uuid)
            if failed:
                allocation.state, allocation.last_error = ERROR, failed
            reservation.insert_allocation(session, allocation)
        stored = True
    except IntegrityError:
        raise _duplicate(ctx, uuid, name) from None
    except CommitOutcomeUnknown as exc:
        stored = _commit_resolved(ctx, exc, _stored(allocation.id, uuid))
    finally:
        if not stored or allocation.state == ERROR:
            workers.release_slot()
    if allocation.state == ERROR:
        return _created(ctx, views.allocation_view(
            allocation, None, ctx.base_url, ctx.minor, None))
    job = workers.job_for(allocation)
    wait = prefer.requested_wait(
        ctx.request.headers.getlist("Prefer"), ctx.services.max_prefer_wait
    )
    permits = ctx.services.waiting
    if not wait or not permits.try_acquire():
        workers.submit(allocation.id, allocation.uuid, job)
        # Rendered outside the write transaction, which is kept short; a
        # new allocation has no node, so the view needs no query.
        view = views.allocation_view(
            allocation, None, ctx.base_url, ctx.minor, None
        )
        return _created(ctx, _with_queue(ctx, allocation, view))
    try:
        response = _created(ctx, _with_queue(
            ctx, allocation, _settled_view(ctx, allocation, job, wait)))
    finally:
        permits.release()
    response.headers["Preference-Applied"] = f"wait={int(wait)}"
    return response


def _instance_in_use(session: Session, given_uuid: str | None) -> str | None:
    """Why an allocation whose ``uuid`` is already a node's
    ``instance_uuid`` fails: as in Ironic, it is stored in ``error``
    (Ironic fails it when it tries to give it a node).  The holder may
    belong to a project the caller cannot see, so it is not named."""
    if not given_uuid or session.scalar(
            select(Node.id).where(Node.instance_uuid == given_uuid)) is None:
        return None
    return (f"Instance {given_uuid} is already associated with a node, it "
            f"cannot be associated with another node.")


def _scope(ctx: Context) -> str | None:
    """The project whose allocations a member's figures count (None: an
    admin's count everything)."""
    who = policy.principal(ctx)
    return None if who.admin else who.project


def _with_queue(ctx: Context, allocation: Allocation,
                body: dict[str, Any]) -> dict[str, Any]:
    """Add the queue extension's ``queue`` object (deadline, position in
    line) to the view of an allocation waiting in line, for a request
    that opted in; anything else is returned unchanged."""
    deadline = allocation.queue_deadline
    if (deadline is None or body.get("state") != ALLOCATING
            or not extensions.queue_requested(ctx)):
        return body
    try:
        with ctx.services.db.read() as session:
            position = line.queue_position(
                session, allocation, utcnow(), _scope(ctx))
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        return body  # the allocation is stored; answer it as it is
    if position < 1:  # settled or out of time since the view was made
        return body
    return {**body, "queue": queue.view(deadline, position)}


def _settled_view(
    ctx: Context, allocation: Allocation, job: Job, wait: float
) -> dict[str, Any]:
    """The committed allocation after waiting up to ``wait`` seconds for
    it to settle.

    The worker's report saves reading the row back; without one (not
    settled within the wait, or the backend could not say) the row is
    read.  The row is committed, so nothing here may turn into an error
    that invites a retry (a retried create is a second allocation): if
    the wait or the read fails, the answer is the allocation as stored.
    """
    try:
        settled = ctx.services.workers.settle(allocation.id, job, wait)
        if settled is not None:
            allocation.state = settled.state
            allocation.last_error = settled.last_error
            allocation.funnel_error = settled.funnel_error
            allocation.updated_at = settled.updated_at
            return views.allocation_view(
                allocation, settled.node_uuid, ctx.base_url, ctx.minor,
                None, extensions.constraints_requested(ctx),
            )
        with ctx.services.db.read() as session:
            current = session.get(Allocation, allocation.id)
            if current is None:  # deleted meanwhile: answer what was made
                current = allocation
            return _render(ctx, session, current)
    except Exception as exc:
        if is_unavailable(exc):
            LOG.warning("Allocation %s is stored; answering it as stored, "
                        "the database became unavailable: %s",
                        allocation.uuid, short_reason(exc))
        else:
            LOG.exception("Allocation %s is stored; answering it as "
                          "stored after an unexpected error",
                          allocation.uuid)
        return views.allocation_view(
            allocation, None, ctx.base_url, ctx.minor, None
        )


def _backfill(ctx: Context, body: dict[str, Any]) -> Response:
    """Create an ``active`` allocation for an already deployed node.

    Unlike Ironic, a mismatch is a 400/409 and nothing is stored.  The
    node is locked first (the one lock order) and given to the new
    allocation with the same compare-and-set as a worker's reservation,
    so two backfills of one node never both succeed.
    """
    with ctx.services.db.write() as session:
        named = node_as_filter_argument(ctx, session, str(body["node"]))
        node = lookups.node_by_ident(session, named.uuid, by_uuid=True)
        if node is None:  # deleted since it was looked up
            raise bad_request(f"Node {named.uuid} could not be found.")
        uuid = body.get("uuid") or node.instance_uuid or str(uuidlib.uuid4())
        name = body.get("name")
        rc = body.get("resource_class") or node.resource_class
        traits = list(dict.fromkeys(body.get("traits") or []))
        candidates = resolve_candidates(
            ctx, session, list(body.get("candidate_nodes") or [])
        )
        _check_backfill(session, node, rc, traits, candidates)
        _check_unique(session, uuid, name)
        now = utcnow()
        allocation = Allocation(
            uuid=uuid,
            name=name,
            state=ACTIVE,
            node_id=node.id,
            resource_class=rc,
            traits=traits,
            candidate_nodes=candidates,
            extra=body.get("extra") or {},
            owner=body.get("owner"),
            conductor_affinity=ctx.services.workers.affinity,
            created_at=now,
            updated_at=now,
        )
        reservation.insert_allocation(session, allocation)
        if not reservation.backfill(session, allocation, node.id, now):
            raise conflict(
                f"Node {node.uuid} is associated with instance "
                f"{node.instance_uuid}."
            )
        result = views.allocation_view(
            allocation, node.uuid, ctx.base_url, ctx.minor, None
        )
    return _created(ctx, result)


def _check_backfill(
    session: Session, node: Node, rc: str | None, traits: list[str],
    candidates: list[str],
) -> None:
    """400/409 when the deployed node does not match the request."""
    node_traits = set(
        session.scalars(
            select(NodeTrait.trait).where(NodeTrait.node_id == node.id)
        )
    )
    errors = []
    if rc != node.resource_class:
        errors.append(
            f"Resource class {node.resource_class} does not match the "
            f"requested resource class {rc}"
        )
    if not set(traits) <= node_traits:
        errors.append(
            f"List of traits {sorted(node_traits)} does not match the "
            f"requested traits {traits}"
        )
    if candidates and node.uuid not in candidates:
        errors.append(
            f"Candidate nodes must be empty or contain the target "
            f"node, but got {candidates}"
        )
    if node.provision_state != ns.ACTIVE:
        errors.append(
            f'Node must be in the "active" state, but the current '
            f'state is "{node.provision_state}"'
        )
    if errors:
        status = 400 if len(errors) > 1 or (
            node.provision_state == ns.ACTIVE
        ) else 409
        raise ApiError(
            status,
            f"Cannot backfill an allocation for node {node.uuid}: "
            f"{'; '.join(errors)}",
        )


def _created(ctx: Context, body: dict[str, Any]) -> Response:
    response = json_response(body, 201)
    response.headers["Location"] = (
        f"{ctx.base_url}/v1/allocations/{body['uuid']}"
    )
    return response


_PATCHABLE = ("name", "extra")


def update_allocation(ctx: Context, ident: str) -> Response:
    """PATCH /v1/allocations/{ident}: only name and extra (1.57+)."""
    _gate(ctx, 405, versions.ALLOCATION_UPDATE,
          "The API version does not allow updating allocations")
    patch = ctx.json_body()
    schemas.validate(patch, schemas.JSON_PATCH)
    assert isinstance(patch, list)
    for op in patch:
        root = op["path"].lstrip("/").split("/")[0]
        if root not in _PATCHABLE:
            raise bad_request(
                f"Cannot patch {op['path']}. Only the following can be "
                f"updated: {', '.join(_PATCHABLE)}"
            )
    with ctx.services.db.write() as session:
        allocation = find_allocation(session, ident, ctx)
        current = {"name": allocation.name, "extra": allocation.extra or {}}
        try:
            patched = jsonpatch.apply_patch(current, patch)
        except (jsonpatch.JsonPatchException,
                jsonpatch.JsonPointerException) as exc:
            raise bad_request(f"Invalid patch: {exc}") from None
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
        result = _render(ctx, session, allocation)
    return json_response(result)


def _delete(session: Session, allocation: Allocation) -> None:
    if allocation.node_id is not None:
        node = release.release_view(session, allocation.node_id)
        if node is not None:
            error = release_rules.allocation_removal_error(
                node, allocation.uuid)
            if error:
                raise conflict(error)
    release.release_in_session(session, allocation)


def delete_allocation(ctx: Context, ident: str) -> Response:
    """DELETE /v1/allocations/{ident}: release the node, drop the row."""
    _gate(ctx, 405)
    return _release(ctx, lambda session: allocation_to_release(
        session, ident, ctx))


def _release(ctx: Context, find: Callable[[Session], Allocation]
             ) -> Response:
    """Delete the allocation ``find`` locks, releasing its node."""
    # Read inside the transaction: a failed commit expires the object.
    found: list[tuple[int, str]] = []
    try:
        with ctx.services.db.write() as session:
            allocation = find(session)
            found.append((allocation.id, allocation.uuid))
            _delete(session, allocation)
    except CommitOutcomeUnknown as exc:
        _commit_resolved(ctx, exc, _stored(*found[0], present=False))
    _node_may_be_free(ctx)
    return empty_response(204)


def _stored(allocation_id: int, uuid: str, present: bool = True
            ) -> Callable[[Session], bool]:
    """A probe: whether the allocation row is there (or, with
    ``present=False``, gone)."""
    def probe(session: Session) -> bool:
        row = session.scalar(select(Allocation.id).where(
            Allocation.id == allocation_id, Allocation.uuid == uuid))
        return (row is not None) == present
    return probe


def _commit_resolved(ctx: Context, exc: CommitOutcomeUnknown,
                     probe: Callable[[Session], bool]) -> bool:
    """After a commit lost with the connection: True when ``probe`` shows
    it happened; otherwise the request's answer is a 503, "changed
    nothing" when the database shows that, "may or may not" when it did
    not answer again in time."""
    applied = commit_check.applied(ctx.services.db, probe)
    if applied:
        LOG.info("A commit lost with the connection had been applied")
        return True
    if applied is None:
        raise exc
    assert exc.__cause__ is not None  # the driver's connection error
    raise exc.__cause__


def _node_may_be_free(ctx: Context) -> None:
    """After a release: allocations waiting in line here try at once
    (other processes see the node on their next queue round)."""
    if ctx.services.queue is not None:
        ctx.services.queue.wake()


def _node_allocation(
    ctx: Context, session: Session, node_ident: str
) -> Allocation:
    if ctx.minor < versions.ALLOCATIONS:
        raise no_route()
    try:
        node = find_node(ctx, session, node_ident)
    except ApiError as exc:
        exc.status = 400 if exc.status == 404 else exc.status
        raise
    allocation = release.holder_of(session, node)
    if allocation is None or not policy.allocation_visible(
        policy.principal(ctx), allocation.owner
    ):
        raise not_found(f"Allocation for node {node_ident} was not found")
    return allocation


def get_node_allocation(ctx: Context, ident: str) -> Response:
    """GET /v1/nodes/{node}/allocation."""
    fields = listing.parse_fields(ctx.query("fields"))
    with ctx.services.db.read() as session:
        allocation = _node_allocation(ctx, session, ident)
        views.check_allocation_fields(fields, ctx.minor)
        return json_response(_render(ctx, session, allocation, fields))


def delete_node_allocation(ctx: Context, ident: str) -> Response:
    """DELETE /v1/nodes/{node}/allocation."""
    return _release(ctx, lambda session: _node_allocation(
        ctx, session, ident))
