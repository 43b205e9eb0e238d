"""Creating one allocation: ``POST /v1/allocations``, safe to repeat.

The body is built and checked here, the extensions the create needs are
opted into (constraints on the server or as prefiltered candidates, the
queue, ``Prefer: wait``), and a retried create whose first attempt made
the allocation returns that allocation (see
:meth:`Client.create_allocation` for the guarantees).
"""

from __future__ import annotations

import datetime
import logging
import uuid as uuidlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from baremetal_allocclient import exceptions, extension_names, leases
from baremetal_allocclient.v1 import allocations, budget, versions
from baremetal_allocclient.v1.resources import Allocation

if TYPE_CHECKING:
    from baremetal_allocclient.constraints import Constraints
    from baremetal_allocclient.v1.protocol import Session

LOG = logging.getLogger(__name__)


def lease_duration(lease: datetime.timedelta | str) -> datetime.timedelta:
    """A lease argument as a duration (InvalidArgument when invalid)."""
    try:
        return leases.as_duration(lease)
    except leases.LeaseError as exc:
        raise exceptions.InvalidArgument(str(exc)) from None


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
    resource_class: str | None = None,
    *,
    traits: Iterable[str] = (),
    candidate_nodes: Iterable[str] = (),
    name: str | None = None,
    uuid: str | None = None,
    extra: Mapping[str, Any] | None = None,
    node: str | None = None,
    owner: str | None = None,
    prefer_wait: float | None = None,
    deadline: budget.Deadline | None = None,
    constraints: Constraints | None = None,
    lease: datetime.timedelta | str | None = None,
    queue: bool = False,
) -> Allocation:
    """The work of :meth:`Client.create_allocation` (see there)."""
    if lease is not None:
        extra = leases.with_lease(extra, lease_duration(lease),
                                  leases.utcnow())
    if resource_class is None and node is None:
        raise exceptions.InvalidArgument(
            "resource_class is required unless node is given"
        )
    body = _body(resource_class, traits, candidate_nodes, extra,
                 name=name,
                 uuid=str(uuidlib.uuid4()) if uuid is None else uuid,
                 node=node,
                 owner=owner)
    feature = versions.ALLOCATIONS
    if owner is not None:
        feature = versions.ALLOCATION_OWNER
    elif node is not None:
        feature = versions.ALLOCATION_BACKFILL
    deadline = deadline or budget.current() or budget.unlimited(
        session._clock)
    with budget.bounded(deadline):
        return _post(session, body, feature, deadline, prefer_wait,
                     constraints, queue)


def _body(resource_class: str | None, traits: Iterable[str],
          candidate_nodes: Iterable[str],
          extra: Mapping[str, Any] | None,
          **optional: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if resource_class is not None:
        body["resource_class"] = resource_class
    trait_list = allocations.strings("traits", traits)
    if trait_list:
        body["traits"] = trait_list
    candidates = allocations.strings("candidate_nodes", candidate_nodes)
    if candidates:
        body["candidate_nodes"] = candidates
    for key, value in optional.items():
        if value is not None:
            body[key] = value
    if extra is not None:
        body["extra"] = dict(extra)
    return body


def _post(
    session: Session, body: dict[str, Any], feature: versions.Feature,
    deadline: budget.Deadline, prefer_wait: float | None,
    constraints: Constraints | None, queue: bool,
) -> Allocation:
    """Complete ``body`` with the extensions it needs and send it."""
    try:
        headers = _headers(session, body, deadline, prefer_wait,
                           constraints, queue)
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
    return allocations.parse(session, response)


def _headers(
    session: Session, body: dict[str, Any], deadline: budget.Deadline,
    prefer_wait: float | None, constraints: Constraints | None,
    queue: bool,
) -> dict[str, str] | None:
    """The create's headers (``Prefer: wait``, the extensions it opts
    in to); adds the extensions' fields to ``body``.  The hold is
    computed last, from what the discovery left of ``deadline``."""
    opted_in: list[str] = []
    if constraints:
        opted_in += constrain(session, body, constraints)
    if queue:
        opted_in.append(_enqueue(session, body, deadline))
    opted_in += [name for name in session._known_extensions()
                 if name not in opted_in]
    hold = None if prefer_wait is None else deadline.hold(prefer_wait)
    headers = prefer_wait_header(hold, session._transport.request_timeout)
    if opted_in:
        headers = {**(headers or {}),
                   extension_names.EXTENSION_HEADER: ", ".join(opted_in)}
    return headers


def _enqueue(session: Session, body: dict[str, Any],
             deadline: budget.Deadline) -> str:
    """Add the queue extension's field to a create body; return the
    extension's name for the header."""
    from baremetal_allocclient.v1 import queueing

    if body.get("node") is not None:
        raise exceptions.InvalidArgument(
            "waiting in line does not apply to a backfill (node)")
    ceiling = queueing.advertised(session._v1_document())
    if ceiling is None:
        raise exceptions.InvalidArgument(
            "this server does not offer waiting in line (the queue "
            "extension); use allocate(..., queue=True), which "
            "retries instead")
    body["queue"] = queueing.queue_field(deadline.remaining(), ceiling)
    session._queue_used = True
    return queueing.EXTENSION


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


def constrain(session: Session, body: dict[str, Any],
              constraints: Constraints) -> list[str]:
    """Add ``constraints`` to an allocation body: as the extension's
    field (returning its name for the header), or as prefiltered
    candidates."""
    from baremetal_allocclient.v1 import extensions, selecting

    if body.get("node") is not None:
        raise exceptions.InvalidArgument(
            "constraints do not apply to a backfill (node)")
    if extensions.supports_constraints(session):
        body["constraints"] = constraints.to_wire()
        return [extension_names.CONSTRAINTS]
    plan = selecting.prefilter(
        session._transport, selecting.selection_of(body, constraints))
    # With require_node_name the plan holds that one node only.
    body["candidate_nodes"] = list(plan.candidates)
    if plan.preferred and "name" not in body:
        # Ironic tries the node named like the allocation first.
        body["name"] = constraints.node_name
    return []
