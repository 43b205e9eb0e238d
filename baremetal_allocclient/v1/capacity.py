"""Free and used nodes per resource class: ``GET /v1/allocation_capacity``,
an extension of baremetal-alloc-server (Ironic answers 404)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from baremetal_allocclient import exceptions
from baremetal_allocclient.v1 import versions

if TYPE_CHECKING:
    from baremetal_allocclient.constraints import Constraints
    from baremetal_allocclient.v1.protocol import Session

#: The reference server's capacity extension (Ironic answers 404).
CAPACITY_PATH: Final = "/v1/allocation_capacity"


def get_capacity(
    session: Session, resource_class: str | None = None,
    constraints: Constraints | None = None,
) -> list[dict[str, Any]]:
    """The work of :meth:`Client.get_allocation_capacity` (see there)."""
    params = {"resource_class": resource_class} if resource_class else {}
    if constraints:
        params["constraints"] = json.dumps(constraints.to_wire())
    transport = session._transport
    try:
        response = transport.request(
            "GET", CAPACITY_PATH, feature=versions.ALLOCATIONS,
            params=params,
        )
    except exceptions.NotFound:
        raise exceptions.ExtensionNotSupported(
            f"The server at {transport.root} has no allocation "
            f"capacity ({CAPACITY_PATH} is an extension of "
            f"baremetal-alloc-server; Ironic does not offer it)"
        ) from None
    body = transport.json(response)
    rows = body.get("capacity") if isinstance(body, dict) else None
    if not isinstance(rows, list):
        raise exceptions.ClientError(
            "unexpected capacity document from the server"
        )
    return [dict(row) for row in rows if isinstance(row, dict)]
