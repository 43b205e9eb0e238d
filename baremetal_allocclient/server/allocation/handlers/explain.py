"""``POST /v1/allocation_explain``: the selection funnel of an allocation
request, without reserving anything (part of the constraints extension;
Ironic has no such endpoint).

The body is what ``POST /v1/allocations`` takes, ``constraints``
included (no opt-in header is needed on this endpoint).  The answer
counts, in one query, the nodes left after each step of
:func:`baremetal_allocclient.constraints.steps` and names the first step
that left none.  Members count only the nodes they own or lease; a
request with an owner counts only that owner's nodes, as the funnel in
the allocation's ``last_error`` does.
"""

from __future__ import annotations

from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.allocation.handlers import extensions
from baremetal_allocclient.server.allocation.handlers.services import (
    allocation_services,
)
from baremetal_allocclient.server.allocation.selection import Request
from baremetal_allocclient.server.allocation.service import records
from baremetal_allocclient.server.api import versions
from baremetal_allocclient.server.api.context import (
    Context,
    json_response,
    principal,
)
from baremetal_allocclient.server.api.errors import ApiError, bad_request
from baremetal_allocclient.server.api.http import Response


def explain_allocation(ctx: Context) -> Response:
    """The funnel of the request in the body."""
    if ctx.minor < versions.ALLOCATIONS:
        raise ApiError(404, "The resource could not be found.")
    body = ctx.json_body()
    schemas.validate(body, schemas.allocation_create(ctx.version, True))
    assert isinstance(body, dict)
    if body.get("node"):
        raise bad_request("Explain does not apply to a backfill")
    if not body.get("resource_class"):
        raise bad_request("The resource_class field is mandatory")
    wanted = extensions.parse_constraints(body)
    request, funnel = records.funnel(ctx.services.db, principal(ctx), Request(
        resource_class=body["resource_class"],
        traits=tuple(dict.fromkeys(body.get("traits") or [])),
        owner=body.get("owner"),
        name=body.get("name"),
        constraints=wanted,
    ), list(body.get("candidate_nodes") or []))
    services = allocation_services(ctx)
    order = records.order_entry(services.db, request,
                                services.default_order)
    return json_response({"resource_class": request.resource_class,
                          **funnel.as_dict(), "order": order})
