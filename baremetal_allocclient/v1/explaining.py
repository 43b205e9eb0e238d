"""The selection funnel of a request, reserving nothing (``explain``).

One ``POST /v1/allocation_explain`` on a server with the constraints
extension; elsewhere (Ironic) the funnel is computed here from one paged
node listing (see :mod:`~baremetal_allocclient.v1.selecting`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from baremetal_allocclient.constraints import EXPLAIN_PATH, Constraints
from baremetal_allocclient.constraints import funnel as funnel_of
from baremetal_allocclient.v1 import (
    allocations,
    extensions,
    selecting,
    versions,
)

if TYPE_CHECKING:
    from baremetal_allocclient.v1.protocol import Session


def explain(
    session: Session,
    resource_class: str,
    *,
    traits: Iterable[str] = (),
    candidate_nodes: Iterable[str] = (),
    owner: str | None = None,
    constraints: Constraints | None = None,
) -> dict[str, Any]:
    """The work of :meth:`Client.explain` (see there)."""
    body: dict[str, Any] = {"resource_class": resource_class}
    for key, values in (("traits", traits),
                        ("candidate_nodes", candidate_nodes)):
        listed = allocations.strings(key, values)
        if listed:
            body[key] = listed
    if owner is not None:
        body["owner"] = owner
    wanted = constraints or Constraints()
    selection = selecting.selection_of(body, wanted)
    transport = session._transport
    if extensions.supports_constraints(session):
        if wanted:
            body["constraints"] = wanted.to_wire()
        response = transport.request(
            "POST", EXPLAIN_PATH, feature=versions.ALLOCATIONS,
            json=body)
        return selecting.funnel_from_document(
            selection, transport.json(response))
    nodes = selecting.iter_nodes(
        transport, selecting.list_filters(selection, False))
    funnel, _survivors = funnel_of(selection, nodes)
    return selecting.explain_document(selection, funnel)
