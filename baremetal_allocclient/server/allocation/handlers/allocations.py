"""``/v1/allocations`` and ``/v1/nodes/{node}/allocation``: parse, check
the version, call the service, render."""

from __future__ import annotations

from typing import Any

from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.allocation import marks, views
from baremetal_allocclient.server.allocation.handlers import (
    extensions,
    marks_view,
    watch,
)
from baremetal_allocclient.server.allocation.handlers.services import (
    allocation_services,
)
from baremetal_allocclient.server.allocation.line.waiting import (
    view as line_view,
)
from baremetal_allocclient.server.allocation.service import (
    creating,
    records,
    releasing,
    watching,
)
from baremetal_allocclient.server.api import (
    json_text,
    listing,
    prefer,
    versions,
)
from baremetal_allocclient.server.api.context import (
    Context,
    empty_response,
    json_text_response,
    node_scope,
    principal,
)
from baremetal_allocclient.server.api.errors import (
    ApiError,
    bad_request,
    no_route,
    not_acceptable,
)
from baremetal_allocclient.server.api.extensions import (
    constraints_requested,
    queue_requested,
)
from baremetal_allocclient.server.api.http import Response
from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.allocation_row import AnyAllocation
from baremetal_allocclient.server.db.models import Allocation, utcnow
from baremetal_allocclient.server.domain import identifiers
from baremetal_allocclient.server.domain.paging import Page

_NOT_ALLOWED = "The API version does not allow allocations"
_STATES = ("allocating", "active", "error")


def _gate(ctx: Context, status: int, minor: int = versions.ALLOCATIONS,
          message: str = _NOT_ALLOWED) -> None:
    if ctx.minor < minor:
        raise ApiError(status, message)


def _render(ctx: Context, allocation: Allocation, node_uuid: str | None,
            fields: list[str] | None = None) -> str:
    return marks_view.record_with_fields(views.allocation_view(
        allocation, node_uuid, ctx.base_url, ctx.minor, fields,
        constraints_requested(ctx),
    ), marks_view.shown(ctx), allocation)


def list_allocations(ctx: Context) -> Response:
    """GET /v1/allocations with filters and pagination."""
    _gate(ctx, 404)
    owner = ctx.query("owner")
    if owner is not None and ctx.minor < versions.ALLOCATION_OWNER:
        raise not_acceptable()
    fields = listing.parse_fields(ctx.query("fields"))
    views.check_allocation_fields(fields, ctx.minor)
    page = Page(
        limit=listing.parse_limit(ctx.query("limit")),
        sort_key=listing.parse_sort_key(
            ctx.query("sort_key"), views.ALLOCATION_SORT_KEYS
        ),
        sort_dir=listing.parse_sort_dir(ctx.query("sort_dir")),
    )
    marker = ctx.query("marker")
    if marker is not None and not identifiers.is_uuid_like(marker):
        raise bad_request(f"Schema error: '{marker}' is not a 'uuid'")
    opted = marks_view.shown(ctx)
    cursor = (watching.cursor(ctx.services.db)
              if watch.opted_in(ctx) else None)
    rows = records.list_page(ctx.services.db, principal(ctx), records.Listing(
        page=page, owner=owner, state=ctx.query("state"),
        resource_class=ctx.query("resource_class"),
        node=ctx.query("node"), marker=marker, marks=bool(opted),
    ))
    render = views.renderer(
        ctx.base_url, ctx.minor, fields,
        constraints_requested(ctx))
    shown: Any = (marks_view.rows(render.row, rows, opted) if opted
                  else map(render.row, rows))
    members: list[tuple[str, str | json_text.Items]] = [
        ("allocations", json_text.Items(shown))]
    last = rows[-1][lookups.ALLOCATION_UUID] if rows else None
    link = listing.next_link(
        ctx.base_url, "allocations", dict(ctx.request.args), page,
        len(rows), last,
    )
    if link:
        members.append(("next", json_text.string(link)))
    response = json_text_response(json_text.members(members))
    if cursor is not None:
        response.headers[extensions.WATCH_CURSOR_HEADER] = str(cursor)
    return response


def get_allocation(ctx: Context, ident: str) -> Response:
    """GET /v1/allocations/{ident}."""
    _gate(ctx, 404)
    fields = listing.parse_fields(ctx.query("fields"))
    views.check_allocation_fields(fields, ctx.minor)
    row, node_uuid = records.read(ctx.services.db, ident, principal(ctx))
    body = marks_view.record_with_fields(views.allocation_view(
        row, node_uuid, ctx.base_url, ctx.minor, fields,
        constraints_requested(ctx),
    ), marks_view.shown(ctx), row)
    if fields is None and row.queue_deadline is not None:
        # Only an allocation waiting in line can have a place in line.
        body = _with_queue(ctx, lookups.allocation_from_row(row), body)
    return json_text_response(body)


def _validated_create_body(ctx: Context) -> dict[str, Any]:
    body = ctx.json_body()
    if isinstance(body, dict) and "owner" in body and (
        ctx.minor < versions.ALLOCATION_OWNER
    ):
        raise not_acceptable()
    opted = marks_view.shown(ctx)
    schemas.validate(body, schemas.allocation_create(
        ctx.version, extended=constraints_requested(ctx),
        queue=queue_requested(ctx), group=opted.group, lease=opted.lease))
    assert isinstance(body, dict)
    name = body.get("name")
    if name is not None and not identifiers.is_valid_name(name):
        raise bad_request(
            f"Cannot create allocation with invalid name '{name}'"
        )
    uuid = body.get("uuid")
    if uuid is not None and not identifiers.is_uuid(uuid):
        raise bad_request(f"Expected UUID for uuid: {uuid}")
    if uuid is not None:
        body["uuid"] = identifiers.canonical_uuid(uuid)
    return body


def create_allocation(ctx: Context) -> Response:
    """POST /v1/allocations: store ``allocating`` and hand to a worker.

    With ``Prefer: wait=N`` the answer waits up to N seconds (capped) for
    the allocation to settle (see ``AllocationWorkers.settle``), so it
    usually carries the settled allocation.  Every input is parsed before
    anything is stored.
    """
    _gate(ctx, 405)
    body = _validated_create_body(ctx)
    now = utcnow()
    queue_deadline = extensions.queue_deadline(ctx, body, now)
    opted = marks_view.shown(ctx)
    columns = marks.create_columns(body, opted, now)
    if body.get("node"):
        if body.get("constraints"):
            raise bad_request("Constraints do not apply to a backfill")
        return _backfill(ctx, body, columns)
    wanted = extensions.parse_constraints(body)
    if not body.get("resource_class"):
        raise bad_request(
            "The resource_class field is mandatory when not backfilling"
        )
    services = allocation_services(ctx)
    wait = prefer.requested_wait(
        ctx.request.headers.getlist("Prefer"), services.max_prefer_wait
    )
    new = creating.NewAllocation(
        uuid=body.get("uuid"),
        name=body.get("name"),
        resource_class=body["resource_class"],
        traits=list(dict.fromkeys(body.get("traits") or [])),
        candidate_nodes=list(body.get("candidate_nodes") or []),
        extra=body.get("extra") or {},
        owner=body.get("owner"),
        constraints=wanted.to_wire() if wanted else None,
        queue_deadline=queue_deadline,
        created_at=now,
        marks=columns,
    )
    answer = creating.create(services.db, services.workers, services.waiting,
                             new, principal(ctx), wait,
                             _line_scope(ctx))
    allocation = answer.allocation
    # A new allocation has no node, so its view needs no query.
    view = marks_view.record_with_fields(views.allocation_view(
        allocation, answer.node_uuid, ctx.base_url, ctx.minor, None,
        answer.settled and constraints_requested(ctx),
    ), opted, allocation)
    response = _created(ctx, allocation.uuid,
                        _queue_field(allocation, view, answer.position))
    if answer.waited:
        response.headers["Preference-Applied"] = f"wait={int(wait)}"
    return response


def _line_scope(ctx: Context) -> creating.LineScope | None:
    """Whose allocations count for a place in line, for a request that
    opted into the queue extension (None: it did not).  A member's
    figures count its project's allocations, an admin's everything."""
    if not queue_requested(ctx):
        return None
    who = principal(ctx)
    return creating.LineScope(None if who.admin else who.project)


def _queue_field(allocation: AnyAllocation, body: str,
                 position: int | None) -> str:
    """Add the queue extension's ``queue`` object (deadline, position in
    line) to the view of an allocation waiting in line."""
    if position is None or allocation.queue_deadline is None:
        return body
    return json_text.with_member(body, "queue", json_text.value(
        line_view(allocation.queue_deadline, position)))


def _with_queue(ctx: Context, allocation: AnyAllocation, body: str
                ) -> str:
    """The view with the ``queue`` object when the request opted in and
    the allocation waits in line."""
    position = creating.place_in_line(ctx.services.db, allocation,
                                      _line_scope(ctx))
    return _queue_field(allocation, body, position)


def _backfill(ctx: Context, body: dict[str, Any],
              columns: dict[str, Any]) -> Response:
    """Create an ``active`` allocation for an already deployed node."""
    services = allocation_services(ctx)
    allocation, node_uuid = creating.backfill(
        services.db, services.workers.affinity, creating.Backfill(
            uuid=body.get("uuid"),
            name=body.get("name"),
            resource_class=body.get("resource_class"),
            traits=list(dict.fromkeys(body.get("traits") or [])),
            candidate_nodes=list(body.get("candidate_nodes") or []),
            extra=body.get("extra") or {},
            owner=body.get("owner"),
            node=str(body["node"]),
            marks=columns,
        ), principal(ctx), services.recorder,
        services.workers.backend.holder)
    return _created(ctx, allocation.uuid, marks_view.record_with_fields(
        views.allocation_view(allocation, node_uuid, ctx.base_url,
                              ctx.minor, None),
        marks_view.shown(ctx), allocation))


def _created(ctx: Context, uuid: str, body: str) -> Response:
    response = json_text_response(body, 201)
    response.headers["Location"] = f"{ctx.base_url}/v1/allocations/{uuid}"
    return response


_PATCHABLE = ("name", "extra")


def update_allocation(ctx: Context, ident: str) -> Response:
    """PATCH /v1/allocations/{ident}: only name and extra (1.57+), and
    ``lease`` for a request that opted into the leases extension."""
    _gate(ctx, 405, versions.ALLOCATION_UPDATE,
          "The API version does not allow updating allocations")
    patch = ctx.json_body()
    schemas.validate(patch, schemas.JSON_PATCH)
    assert isinstance(patch, list)
    lease = marks_view.shown(ctx).lease
    patchable = (*_PATCHABLE, "lease") if lease else _PATCHABLE
    for op in patch:
        root = op["path"].lstrip("/").split("/")[0]
        if root not in patchable:
            raise bad_request(
                f"Cannot patch {op['path']}. Only the following can be "
                f"updated: {', '.join(_PATCHABLE)}"
            )
    services = allocation_services(ctx)
    allocation, node_uuid = records.update(services.db, ident,
                                           principal(ctx), patch,
                                           services.recorder, lease)
    return json_text_response(_render(ctx, allocation, node_uuid))


def delete_allocation(ctx: Context, ident: str) -> Response:
    """DELETE /v1/allocations/{ident}: release the node, drop the row."""
    _gate(ctx, 405)
    services = allocation_services(ctx)
    releasing.delete(services.db, services.queue, ident, principal(ctx),
                     services.recorder, services.workers.backend.holder)
    return empty_response(204)


def get_node_allocation(ctx: Context, ident: str) -> Response:
    """GET /v1/nodes/{node}/allocation."""
    if ctx.minor < versions.ALLOCATIONS:
        raise no_route()
    fields = listing.parse_fields(ctx.query("fields"))
    allocation, node_uuid = records.node_allocation(
        ctx.services.db, node_scope(ctx), ident)
    views.check_allocation_fields(fields, ctx.minor)
    return json_text_response(_render(ctx, allocation, node_uuid, fields))


def delete_node_allocation(ctx: Context, ident: str) -> Response:
    """DELETE /v1/nodes/{node}/allocation."""
    if ctx.minor < versions.ALLOCATIONS:
        raise no_route()
    services = allocation_services(ctx)
    releasing.delete_node_allocation(services.db, services.queue,
                                     node_scope(ctx), ident,
                                     services.recorder,
                                     services.workers.backend.holder)
    return empty_response(204)
