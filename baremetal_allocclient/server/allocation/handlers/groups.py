"""``POST /v1/allocation_groups``: the groups extension (Ironic has no
such endpoint).

A request that names the extension in ``X-Baremetal-Alloc-Extensions``
gets ``count`` allocations ``active`` on ``count`` distinct nodes, made
in one transaction (:func:`baremetal_allocclient.server.allocation.
group_reservation.reserve_group`), or nothing at all (409 saying
why).  Without the header the path answers 404, as it would on Ironic.
Members are named as :mod:`baremetal_allocclient.groups` says, and a
named group is recorded in each member's ``group`` field
(``allocation/marks.py``), never in ``extra``; a ``lease`` field (the
leases extension) gives every member the same lease.  Wire format:
doc/source/explanation/lifecycle.rst.

The Placement backend claims nodes one by one in Placement, so a group
cannot be one transaction there: such a server does not advertise the
extension and answers 409 here; the SDK then makes the group itself
(creates, and deletes everything on any failure).
"""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

from baremetal_allocclient import constraints, groups
from baremetal_allocclient import spread as spread_model
from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.allocation import marks, views
from baremetal_allocclient.server.allocation.handlers import (
    extensions,
    marks_view,
)
from baremetal_allocclient.server.allocation.handlers.services import (
    allocation_services,
)
from baremetal_allocclient.server.allocation.service import grouping
from baremetal_allocclient.server.api import json_text, versions
from baremetal_allocclient.server.api.context import (
    Context,
    json_text_response,
    principal,
)
from baremetal_allocclient.server.api.errors import (
    ApiError,
    bad_request,
    conflict,
    not_acceptable,
)
from baremetal_allocclient.server.api.extensions import requested
from baremetal_allocclient.server.api.http import Response
from baremetal_allocclient.server.db.models import utcnow
from baremetal_allocclient.server.domain import identifiers
from baremetal_allocclient.spread import Spread

NOT_FOUND = "The resource could not be found."
PLACEMENT_REFUSAL = (
    "Group reservations need the database backend; this server claims "
    "nodes through Placement, one by one. Create the allocations one by "
    "one (the SDK and CLI do this, and roll back on failure).")


#: The backends that reserve a whole group at once.
GROUP_BACKENDS = frozenset({"database", "ironic"})


def supported(ctx: Context) -> bool:
    """Whether this server can reserve a group in one transaction (with
    the claims in Ironic, behind the broker)."""
    return allocation_services(ctx).workers.backend.name in GROUP_BACKENDS


def _body(ctx: Context, lease: bool) -> dict[str, Any]:
    """The validated body, with owner decided and UUIDs canonical."""
    body = ctx.json_body()
    if isinstance(body, dict) and "owner" in body and (
            ctx.minor < versions.ALLOCATION_OWNER):
        raise not_acceptable()
    schemas.validate(body, schemas.allocation_group(ctx.version, lease))
    assert isinstance(body, dict)
    if not body.get("resource_class"):
        raise bad_request("The resource_class field is mandatory")
    try:
        groups.check(body["count"], body.get("name"))
    except groups.GroupError as exc:
        raise bad_request(f"Invalid group: {exc}") from None
    uuids = body.get("uuids") or None
    if uuids is not None:
        if len(uuids) != body["count"]:
            raise bad_request(
                f"uuids lists {len(uuids)} UUIDs for a group of "
                f"{body['count']}")
        bad = [u for u in uuids if not identifiers.is_uuid(u)]
        if bad:
            raise bad_request(f"Expected UUID for uuids: {bad[0]}")
        body["uuids"] = [identifiers.canonical_uuid(u) for u in uuids]
        if len(set(body["uuids"])) != len(uuids):
            raise bad_request("uuids lists a UUID twice")
    return body


def create_group(ctx: Context) -> Response:
    """POST /v1/allocation_groups: all ``count`` members or none."""
    header = ctx.request.headers.get(constraints.EXTENSION_HEADER)
    if (ctx.minor < versions.ALLOCATIONS
            or groups.EXTENSION not in requested(header)):
        raise ApiError(404, NOT_FOUND)
    if not supported(ctx):
        raise conflict(PLACEMENT_REFUSAL)
    opted = marks_view.shown(ctx)
    body = _body(ctx, opted.lease)
    count: int = body["count"]
    group = body.get("name")
    uuids = body.get("uuids") or [str(uuidlib.uuid4()) for _ in range(count)]
    names = groups.member_names(group, count)
    columns = marks.create_columns(body, opted, utcnow())
    if group is not None:
        columns.update(group_name=group, group_size=count)
    wanted = extensions.parse_constraints(body)
    spread = _spread(body)
    services = allocation_services(ctx)
    reserved = grouping.reserve(
        services.db, services.workers.affinity, grouping.Group(
            uuids=uuids, names=names,
            resource_class=body["resource_class"],
            traits=list(dict.fromkeys(body.get("traits") or [])),
            candidate_nodes=list(body.get("candidate_nodes") or []),
            extra=body.get("extra") or {}, owner=body.get("owner"),
            constraints=wanted, marks=columns, spread=spread,
        ), principal(ctx), services.recorder,
        services.workers.backend.holder, services.default_order)
    render = views.AllocationRenderer(ctx.base_url, ctx.minor)
    fields = [
        ("name", json_text.value(group)), ("count", json_text.value(count)),
        ("allocations", json_text.array(
            marks_view.record_with_fields(render(member, node_uuid), opted,
                                     member)
            for member, node_uuid in reserved.members)),
    ]
    if reserved.placement is not None:
        fields.append(("spread", json_text.value(reserved.placement)))
    return json_text_response(json_text.members(fields), 201)


def _spread(body: dict[str, Any]) -> Spread | None:
    """The group's ``spread`` (schema-checked), or None; a spread no
    group of this size can satisfy is a 400."""
    try:
        found = spread_model.from_wire(body.get("spread"))
        if found is not None:
            found.check(body["count"])
    except spread_model.SpreadError as exc:
        raise bad_request(f"Invalid spread: {exc}") from None
    return found
