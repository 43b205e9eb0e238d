"""This server's extensions of the Ironic API, and how a request opts in.

Plain Ironic clients never see an extension: the groups extension's
``POST /v1/allocation_groups`` answers 404 unless the request names it in
the header (doc/source/lifecycle.rst); the constraints extension's
``constraints`` field of ``POST /v1/allocations`` is accepted only when
the request names the extension in the ``X-Baremetal-Alloc-Extensions``
header (otherwise the body is checked exactly as Ironic checks it), and
``GET /v1`` lists the extensions under ``extensions``, a key Ironic does
not send.  Wire format: doc/source/choosing-nodes.rst.
"""

from __future__ import annotations

from typing import Any

from baremetal_allocclient import constraints, leases
from baremetal_allocclient import groups as group_model
from baremetal_allocclient.server.api import capacity
from baremetal_allocclient.server.api.context import Context, Services
from baremetal_allocclient.server.api.errors import bad_request

#: Version of the constraints extension's wire format.
CONSTRAINTS_VERSION = 1
#: Version of the leases extension (the ``extra`` keys it reads).
LEASES_VERSION = 1


def requested(header: str | None) -> set[str]:
    """Extension names in an ``X-Baremetal-Alloc-Extensions`` value."""
    return {part.strip().lower() for part in (header or "").split(",")
            if part.strip()}


def constraints_requested(ctx: Context) -> bool:
    """Whether the request opted into the constraints extension."""
    header = ctx.request.headers.get(constraints.EXTENSION_HEADER)
    return constraints.EXTENSION in requested(header)


def parse_constraints(body: dict[str, Any]) -> constraints.Constraints:
    """The (schema-checked) ``constraints`` of a body; 400 when they
    cannot be evaluated."""
    document = body.get("constraints") or {}
    try:
        return constraints.from_wire(document)
    except constraints.ConstraintError as exc:
        raise bad_request(f"Invalid constraints: {exc}") from None


def lease_advertisement(services: Services | None) -> dict[str, Any]:
    """The ``leases`` entry: the ``extra`` keys, and whether this process
    expires leases by itself (``serve --expire-leases``)."""
    interval = services.lease_expiry if services is not None else 0.0
    return {
        "version": LEASES_VERSION,
        "expires_at_key": leases.EXPIRES_KEY,
        "duration_key": leases.DURATION_KEY,
        "expiring": interval > 0,
        "interval": interval if interval > 0 else None,
        "undeploy": bool(services is not None and services.lease_undeploy),
    }


def advertisement(base_url: str, services: Services | None = None,
                  groups: bool = True) -> dict[str, Any]:
    """The ``extensions`` entry of ``GET /v1`` (``groups``: whether the
    backend reserves groups in one transaction)."""
    found: dict[str, Any] = {
        leases.EXTENSION: lease_advertisement(services),
        constraints.EXTENSION: {
            "version": CONSTRAINTS_VERSION,
            "header": constraints.EXTENSION_HEADER,
            "explain": f"{base_url}{constraints.EXPLAIN_PATH}",
        },
        "capacity": {"href": f"{base_url}{capacity.PATH}"},
    }
    if groups:
        found[group_model.EXTENSION] = {
            "version": group_model.VERSION,
            "header": constraints.EXTENSION_HEADER,
            "href": f"{base_url}{group_model.PATH}",
        }
    return found
