"""``GET /v1/allocation_capacity``: an extension of this server (Ironic
has no such endpoint) showing what an operator may still allocate.

For each resource class: ``total`` nodes, ``allocated`` (holding an
allocation), ``reserved`` (cannot be allocated now; counted per reason:
maintenance, power_unknown, not_available, associated) and ``free``.  With
the Placement backend each entry also carries Placement's own figures
under ``placement``, so drift is visible.  Members see only the nodes
they own or lease.  Available from API 1.52 (allocations).
"""

from __future__ import annotations

from baremetal_allocclient import constraints
from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.allocation.backends.base import Backend
from baremetal_allocclient.server.allocation.backends.database import (
    DatabaseBackend,
)
from baremetal_allocclient.server.allocation.handlers.services import (
    allocation_services,
)
from baremetal_allocclient.server.allocation.service import records
from baremetal_allocclient.server.api import storable, versions
from baremetal_allocclient.server.api.context import (
    Context,
    json_response,
    principal,
)
from baremetal_allocclient.server.api.errors import ApiError, bad_request
from baremetal_allocclient.server.api.http import Response

PATH = "/v1/allocation_capacity"
QUERY = ("resource_class", "constraints")


def _backend(ctx: Context) -> Backend:
    services = allocation_services(ctx)
    return services.backend or DatabaseBackend(services.db)


def _constraints(text: str | None) -> constraints.Constraints | None:
    """``?constraints=<JSON>``: the constraints extension's document; only
    nodes satisfying it are counted."""
    if text is None:
        return None
    try:
        document = storable.document(text)
    except storable.Unstorable as exc:
        raise bad_request(f"Invalid value in constraints: {exc}") from None
    except (ValueError, RecursionError):
        raise bad_request("constraints must be a JSON object") from None
    schemas.validate(document, schemas.CONSTRAINTS)
    try:
        wanted = constraints.from_wire(document)
    except constraints.ConstraintError as exc:
        raise bad_request(f"Invalid constraints: {exc}") from None
    return wanted


def get_capacity(ctx: Context) -> Response:
    """GET /v1/allocation_capacity[?resource_class=RC][&constraints=]."""
    if ctx.minor < versions.ALLOCATIONS:
        raise ApiError(404, "The resource could not be found.")
    resource_class = ctx.query("resource_class")
    if resource_class is not None and not (
        0 < len(resource_class) <= 80 and resource_class.isprintable()
    ):
        raise bad_request(
            "resource_class must be 1 to 80 printable characters."
        )
    backend = _backend(ctx)
    rows = records.capacity(backend, principal(ctx), resource_class,
                            _constraints(ctx.query("constraints")))
    return json_response({"backend": backend.name, "capacity": list(rows)})
