"""The selection funnel of a request, reserving nothing (``explain``).

One ``POST /v1/allocation_explain`` on a server with the constraints
extension; elsewhere (Ironic) the funnel is computed here from one paged
node listing (see :mod:`~baremetal_allocclient.v1.selecting`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from baremetal_allocclient import exceptions
from baremetal_allocclient.constraints import EXPLAIN_PATH
from baremetal_allocclient.constraints import funnel as funnel_of
from baremetal_allocclient.v1 import selecting, versions

if TYPE_CHECKING:
    from baremetal_allocclient.v1.protocol import Session
    from baremetal_allocclient.v1.request import AllocationRequest


def explain(session: Session, request: AllocationRequest) -> dict[str, Any]:
    """The work of :meth:`Client.explain` (see there)."""
    if request.resource_class is None:
        raise exceptions.InvalidArgument("explain needs a resource_class")
    selection = request.selection()
    transport = session._transport
    if selecting.server_evaluates(session, selection.constraints):
        response = transport.request(
            "POST", EXPLAIN_PATH, feature=versions.ALLOCATIONS,
            json=request.selection_body())
        return selecting.funnel_from_document(
            selection, transport.json(response))
    nodes = selecting.iter_nodes(
        transport, selecting.list_filters(selection, False))
    funnel, survivors = funnel_of(selection, nodes)
    return selecting.explain_document(selection, funnel, survivors)
