"""All-or-nothing groups in the SDK: the server's extension when it
advertises one, create-and-roll-back otherwise.

:func:`allocate_group` is the one implementation behind
:meth:`Client.allocate_group` and ``create --all-or-nothing``:

* On a server advertising the groups extension (``GET /v1``
  ``extensions.groups``, the reference server with its database
  backend) it sends one ``POST /v1/allocation_groups``: the server
  reserves every node in one transaction, or nothing.
* Elsewhere (real Ironic, or the reference server on Placement) it
  creates the members one by one, waits for all of them, and on any
  failure deletes every one it made.

Either way the member UUIDs are chosen here and recorded (in a
:class:`~baremetal_allocclient.v1.reservation.Reservation`) before a
request is sent, so a timeout, Ctrl-C or SIGTERM deletes whatever may
exist; one :class:`~baremetal_allocclient.v1.budget.Deadline` bounds the
whole operation.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import uuid as uuidlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from baremetal_allocclient import exceptions, extension_names, groups, leases
from baremetal_allocclient.spread import Spread, SpreadError
from baremetal_allocclient.v1 import (
    allocations,
    budget,
    extensions,
    interrupts,
    marking,
    reservation,
    spreading,
    versions,
    waiting,
)
from baremetal_allocclient.v1.request import lease_duration
from baremetal_allocclient.v1.resources import Allocation

if TYPE_CHECKING:
    from baremetal_allocclient.v1.protocol import AllocationClient, Session
    from baremetal_allocclient.v1.request import AllocationRequest

LOG = logging.getLogger(__name__)

#: Whether a ``GET /v1`` document advertises the groups extension in a
#: version this SDK speaks (pure).
extension_advertised = extensions.groups_advertised


def wire_body(request: AllocationRequest, count: int,
              uuids: Sequence[str], spread: Spread | None = None
              ) -> dict[str, Any]:
    """The ``POST /v1/allocation_groups`` body (pure); ``request.name``
    is the group's name."""
    body = {"count": count, "uuids": list(uuids), **request.body()}
    if spread is not None:
        body["spread"] = spread.to_wire()
    return body


def member_requests(request: AllocationRequest, count: int,
                    uuids: Sequence[str]) -> list[AllocationRequest]:
    """What each member asks for when the client makes the group (pure):
    the same selection, ``NAME-i`` and the group's marks in extra."""
    names = groups.member_names(request.name, count)
    extra = groups.member_extra(request.extra, request.name, count)
    return [dataclasses.replace(request, name=name, uuid=uuid, extra=extra)
            for name, uuid in zip(names, uuids, strict=True)]


def request_problem(request: AllocationRequest) -> str | None:
    """Why a request cannot be a group's (pure), or None."""
    if request.resource_class is None:
        return "a group needs a resource_class"
    for field in ("uuid", "node", "queue"):
        if getattr(request, field):
            return f"{field} does not apply to a group"
    return None


def failure_reason(count: int, members: Sequence[Allocation],
                   exc: BaseException) -> tuple[str, Allocation | None]:
    """Why the group failed, naming the member that did (pure)."""
    by_uuid = {m.uuid: i for i, m in enumerate(members)}
    if isinstance(exc, exceptions.AllocationFailed):
        final = exc.results or (exc.allocation,)
        failed = next((a for a in final if a.state == "error"),
                      exc.allocation)
        index = by_uuid.get(failed.uuid, 0)
        return groups.failure_summary(
            count, index, str(failed.name or failed.uuid),
            failed.last_error), failed
    if isinstance(exc, exceptions.WaitTimeout) and exc.allocations:
        late = exc.allocations[0]
        return groups.failure_summary(
            count, by_uuid.get(late.uuid, 0), str(late.name or late.uuid),
            f"still {late.state} when the time limit of "
            f"{exc.timeout:g} s ran out"), late
    return f"Group of {count} not reserved: {exc}", None


class GroupRun:
    """One group operation and everything it may have made."""

    def __init__(self, client: AllocationClient,
                 request: AllocationRequest,
                 count: int, deadline: budget.Deadline,
                 on_progress: waiting.ProgressCallback | None = None,
                 spread: Spread | None = None) -> None:
        try:
            groups.check(count, request.name)
            if spread is not None:
                spread.check(count)
        except (groups.GroupError, SpreadError) as exc:
            raise exceptions.InvalidArgument(str(exc)) from None
        self.spread = spread
        problem = request_problem(request)
        if problem:
            raise exceptions.InvalidArgument(problem)
        self.client = client
        self.count = count
        self.run = reservation.Reservation(client, request, deadline,
                                           on_progress)
        #: The group's request, its lease recorded (the same end for
        #: every member).
        self.request = self.run.request
        self.uuids = [str(uuidlib.uuid4()) for _ in range(count)]

    def make(self) -> list[Allocation]:
        """All members ``active``; raises on the first failure (the
        caller releases)."""
        if self.client.supports_groups() and (
                self.spread is None or extensions.spread_advertised(
                    self.client._v1_document())):
            return self._native()
        # Real Ironic, or a server that does not spread: members one by
        # one, nodes chosen here for a spread (best effort).
        return self._client_side()

    def _native(self) -> list[Allocation]:
        self.run.expect(self.uuids)
        try:
            made = post_group(
                self.client, wire_body(self.request, self.count, self.uuids,
                                       self.spread),
                self.run.deadline)
        except exceptions.ClientError as exc:
            if not exc.outcome_unknown:
                # Refused or never received: the one transaction created
                # nothing, so there is nothing to clean up.
                self.run.attempted.clear()
            if isinstance(exc, exceptions.Conflict):
                raise native_failure(self.count, exc) from exc
            raise
        self.run.confirm(made)
        return made

    def _client_side(self) -> list[Allocation]:
        nodes: list[str | None] = [None] * self.count
        if self.spread is not None:
            with budget.bounded(self.run.deadline):
                nodes = list(spreading.member_nodes(
                    self.client._transport, self.request, self.spread,
                    self.count))
        for member, node in zip(member_requests(
                self.request, self.count, self.uuids), nodes, strict=True):
            if node is not None:
                member = spreading.member_request(member, node)
            self.run.request = member
            self.run.create(1, hold=False)
        done = self.run.wait()
        if not groups.distinct_nodes([a.node_uuid for a in done]):
            raise exceptions.InvalidResponse(
                "the server gave two members of the group the same node")
        return done

    def fail(self, exc: BaseException, *, interrupted: bool = False
             ) -> exceptions.GroupFailed:
        """Delete everything made; the error to raise for ``exc``."""
        report = self.run.release(interrupted=interrupted)
        for uuid, why in report.failed:
            LOG.warning("Could not delete allocation %s of a failed group: "
                        "%s", uuid, why)
        if isinstance(exc, exceptions.GroupFailed):
            return exceptions.GroupFailed(
                exc.reason, failed=exc.failed, left=report.failed,
                rolled_back=bool(report.deleted or report.failed))
        reason, failed = failure_reason(self.count, self.run.made(), exc)
        # Nothing to roll back when no create may have made anything.
        touched = report.deleted or report.absent or report.failed
        return exceptions.GroupFailed(reason, failed=failed,
                                      left=report.failed,
                                      rolled_back=bool(touched))


def native_failure(count: int, exc: exceptions.Conflict
                   ) -> exceptions.GroupFailed:
    """The error for the server's 409: it created nothing (pure)."""
    message = exc.message
    prefix = f"Group of {count} not reserved"
    reason = message if message.startswith(prefix) else \
        f"{prefix}: {message}"
    return exceptions.GroupFailed(reason, rolled_back=False)


#: The feature the group endpoint needs (the extension needs nothing
#: newer than allocations themselves).
FEATURE = versions.ALLOCATIONS
HEADERS = {extension_names.EXTENSION_HEADER: groups.EXTENSION}


def allocate_group(
    client: AllocationClient,
    count: int,
    request: AllocationRequest,
    *,
    timeout: float | None = waiting.DEFAULT_TIMEOUT,
    on_progress: waiting.ProgressCallback | None = None,
    spread: Spread | None = None,
) -> list[Allocation]:
    """The work of :meth:`Client.allocate_group` (see there)."""
    deadline = client.deadline(timeout)
    with budget.bounded(deadline), \
            interrupts.sigterm_raises() as installed:
        run = GroupRun(client, request, count, deadline, on_progress,
                       spread)
        try:
            return run.make()
        except (KeyboardInterrupt, exceptions.Terminated) as exc:
            failure = run.fail(exc, interrupted=True)
            # What could not be deleted, for a caller that reports it.
            exc.group_left = failure.left  # type: ignore[union-attr]
            if installed and isinstance(exc, exceptions.Terminated):
                interrupts.finish_termination(exc)
            raise
        except exceptions.ClientError as exc:
            raise run.fail(exc) from exc


def post_group(session: Session, body: dict[str, Any],
               deadline: budget.Deadline) -> list[Allocation]:
    """``POST /v1/allocation_groups`` (the groups extension).  A
    retried request whose first attempt made the group returns it."""
    transport = session._transport
    names = [groups.EXTENSION, *marking.outgoing(session, body)]
    headers = {extension_names.EXTENSION_HEADER: ", ".join(
        dict.fromkeys([*names, *marking.READ_EXTENSIONS]))}
    try:
        response = transport.request(
            "POST", groups.PATH, feature=FEATURE, json=body,
            headers=headers, deadline=deadline, idempotent=True)
    except exceptions.Conflict as exc:
        if not exc.retried:
            raise
        made = []
        for uuid in body["uuids"]:
            try:
                found = allocations.get(session, uuid, deadline)
            except exceptions.NotFound:
                raise exc from None
            if groups.group_of(found.marks) != body.get("name") or (
                    found.resource_class != body["resource_class"]):
                raise
            made.append(found)
        LOG.debug("Group create was retried; using the allocations "
                  "made by the first attempt")
        return made
    doc = transport.json(response)
    items = doc.get("allocations") if isinstance(doc, dict) else None
    if not isinstance(items, list) or len(items) != body["count"]:
        raise exceptions.InvalidResponse(
            "unexpected group document from the server")
    return [Allocation.from_wire(item) for item in items]


def list_group(client: AllocationClient, name: str) -> list[Allocation]:
    """The allocations of group ``name``, in member order."""
    found = list(client.list_allocations(group=name))
    return sorted(found, key=lambda a: (len(a.name or ""), a.name or ""))


def renew_group(
    client: AllocationClient, name: str, lease: datetime.timedelta | str
) -> list[Allocation]:
    """The work of :meth:`Client.renew_group` (see there)."""
    extra = leases.lease_extra(lease_duration(lease),
                               leases.utcnow())
    renewed: list[Allocation] = []
    failures: list[str] = []
    for member in list_group(client, name):
        try:
            renewed.append(client.update_allocation(
                str(member.uuid), set_extra=extra))
        except exceptions.ClientError as exc:
            failures.append(f"{member.name or member.ident}: {exc}")
    if failures:
        raise exceptions.ClientError(
            f"Could not renew {len(failures)} allocation(s) of group "
            f"{name} (renewed {len(renewed)}"
            + "".join(f", {a.name or a.ident}" for a in renewed) + "):\n  "
            + "\n  ".join(failures))
    return renewed


def release_group(
    client: AllocationClient, name: str, *, timeout: float | None = None
) -> list[str]:
    """The work of :meth:`Client.release_group` (see there)."""
    deadline = client.deadline(timeout)
    deleted: list[str] = []
    failures: list[str] = []
    with budget.bounded(deadline):
        members = list_group(client, name)
    for member in members:
        try:
            if client.delete_allocation(str(member.uuid),
                                        ignore_missing=True,
                                        deadline=deadline):
                deleted.append(str(member.uuid))
        except exceptions.ClientError as exc:
            failures.append(f"{member.ident}: {exc}")
    if failures:
        raise exceptions.ClientError(
            f"Could not delete {len(failures)} allocation(s) of group "
            f"{name} (deleted {len(deleted)}):\n  "
            + "\n  ".join(failures))
    return deleted
