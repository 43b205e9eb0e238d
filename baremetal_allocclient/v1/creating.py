"""Creating one allocation: ``POST /v1/allocations``, safe to repeat.

The request (:class:`~baremetal_allocclient.v1.request.AllocationRequest`)
gets its lease recorded and a UUID, its body is completed with the
extensions the create needs (constraints on the server or as prefiltered
candidates, :func:`~baremetal_allocclient.v1.selecting.constrain`; the
queue; ``Prefer: wait``), and a retried create whose first attempt made
the allocation returns that allocation (see
:meth:`Client.create_allocation` for the guarantees).
"""

from __future__ import annotations

import dataclasses
import logging
import uuid as uuidlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from baremetal_allocclient import exceptions, extension_names, leases
from baremetal_allocclient.v1 import allocations, budget, marking, versions
from baremetal_allocclient.v1.resources import Allocation

if TYPE_CHECKING:
    from baremetal_allocclient.v1.protocol import Session
    from baremetal_allocclient.v1.request import AllocationRequest

LOG = logging.getLogger(__name__)


def prefer_wait_header(
    seconds: float | None, request_timeout: float | None
) -> dict[str, str] | None:
    """``Prefer: wait=N`` for whole seconds N >= 1 (RFC 7240).

    N stays a second below the per-request timeout: a held answer that
    timed out on the client would leave an allocation the caller never
    learned about.
    """
    if seconds is None:
        return None
    if request_timeout is not None:
        seconds = min(seconds, request_timeout - 1)
    if seconds < 1:
        return None
    return {"Prefer": f"wait={int(seconds)}"}


def matches_request(found: Allocation, body: Mapping[str, Any]) -> bool:
    """Whether an existing allocation is the one ``body`` asked for."""
    wanted_class = body.get("resource_class", found.resource_class)
    return (
        found.resource_class == wanted_class
        and found.name == body.get("name")
        and sorted(found.traits or ()) == sorted(body.get("traits", ()))
    )


def create(
    session: Session,
    request: AllocationRequest,
    *,
    prefer_wait: float | None = None,
    deadline: budget.Deadline | None = None,
) -> Allocation:
    """The work of :meth:`Client.create_allocation` (see there)."""
    request = request.stamped(leases.utcnow())
    if request.resource_class is None and request.node is None:
        raise exceptions.InvalidArgument(
            "resource_class is required unless node is given"
        )
    if request.uuid is None:
        request = dataclasses.replace(request, uuid=str(uuidlib.uuid4()))
    feature = versions.ALLOCATIONS
    if request.owner is not None:
        feature = versions.ALLOCATION_OWNER
    elif request.node is not None:
        feature = versions.ALLOCATION_BACKFILL
    deadline = deadline or budget.current() or budget.unlimited(
        session._clock)
    with budget.bounded(deadline):
        return _post(session, request, feature, deadline, prefer_wait)


def _post(
    session: Session, request: AllocationRequest,
    feature: versions.Feature, deadline: budget.Deadline,
    prefer_wait: float | None,
) -> Allocation:
    """Send ``request`` with the extensions it needs."""
    try:
        body, headers = _prepare(session, request, deadline, prefer_wait)
    except exceptions.ClientError as exc:
        # Whatever a request before the create met, the create was
        # not sent: nothing was made.
        exc.outcome_unknown = False
        raise
    uuid = body["uuid"]
    try:
        response = session._transport.request(
            "POST", "/v1/allocations", feature=feature, json=body,
            headers=headers, deadline=deadline, idempotent=True,
        )
    except exceptions.Conflict as exc:
        if not exc.retried:
            raise
        # An earlier attempt's answer was lost; it may have made the
        # allocation.  Return it if it is the one we asked for.
        existing = _made_by_earlier_attempt(session, uuid, body, deadline)
        if existing is None:
            raise
        return existing
    if response.headers.get(extension_names.WATCH_CURSOR_HEADER,
                            "").isdigit():
        session._watch_offered = True
    return allocations.parse(session, response)


def _prepare(
    session: Session, request: AllocationRequest,
    deadline: budget.Deadline, prefer_wait: float | None,
) -> tuple[dict[str, Any], dict[str, str] | None]:
    """The create's body and headers (``Prefer: wait``, the extensions
    it opts in to).  The hold is computed last, from what the discovery
    and a client-side selection left of ``deadline``."""
    sent = request
    opted_in: list[str] = []
    if request.constraints:
        from baremetal_allocclient.v1 import selecting

        sent, opted_in = selecting.constrain(session, request)
    body = sent.body()
    opted_in += [name for name in marking.outgoing(session, body)
                 if name not in opted_in]
    if request.queue:
        body["queue"] = _queue_field(session, request, deadline)
        opted_in.append(extension_names.QUEUE)
    opted_in += [name for name in session._known_extensions()
                 if name not in opted_in]
    if prefer_wait is not None:
        # A caller that waits: a server with the change stream says so
        # in its answer (no request of its own; Ironic ignores it).
        opted_in.append(extension_names.WATCH)
    hold = None if prefer_wait is None else deadline.hold(prefer_wait)
    headers = prefer_wait_header(hold, session._transport.request_timeout)
    if opted_in:
        headers = {**(headers or {}),
                   extension_names.EXTENSION_HEADER: ", ".join(opted_in)}
    return body, headers


def _queue_field(session: Session, request: AllocationRequest,
                 deadline: budget.Deadline) -> dict[str, Any]:
    """The queue extension's field of a create body."""
    from baremetal_allocclient.v1 import queueing

    if request.node is not None:
        raise exceptions.InvalidArgument(
            "waiting in line does not apply to a backfill (node)")
    ceiling = queueing.advertised(session._v1_document())
    if ceiling is None:
        raise exceptions.InvalidArgument(
            "this server does not offer waiting in line (the queue "
            "extension); use allocate(..., queue=True), which "
            "retries instead")
    session._queue_used = True
    return queueing.queue_field(deadline.remaining(), ceiling)


def _made_by_earlier_attempt(
    session: Session, uuid: str, body: Mapping[str, Any],
    deadline: budget.Deadline,
) -> Allocation | None:
    """The allocation ``uuid`` if it matches the request ``body``."""
    try:
        found = allocations.get(session, uuid, deadline)
    except exceptions.NotFound:
        return None
    if not matches_request(found, body):
        return None
    LOG.debug("Create of %s was retried; using the allocation made "
              "by the first attempt", uuid)
    return found
