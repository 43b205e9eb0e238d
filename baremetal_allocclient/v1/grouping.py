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
import logging
import uuid as uuidlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from baremetal_allocclient import exceptions, groups
from baremetal_allocclient.constraints import EXTENSION_HEADER
from baremetal_allocclient.v1 import budget, reservation, versions, waiting
from baremetal_allocclient.v1.resources import Allocation

if TYPE_CHECKING:
    from baremetal_allocclient.v1.client import Client

LOG = logging.getLogger(__name__)


def extension_advertised(doc: Any) -> bool:
    """Whether a ``GET /v1`` document advertises the groups extension in
    a version this SDK speaks (pure)."""
    if not isinstance(doc, Mapping):
        return False
    found = doc.get("extensions")
    entry = found.get(groups.EXTENSION) if isinstance(found, Mapping) \
        else None
    return isinstance(entry, Mapping) and entry.get("version") == \
        groups.VERSION


def wire_body(request: reservation.Request, count: int,
              uuids: Sequence[str]) -> dict[str, Any]:
    """The ``POST /v1/allocation_groups`` body (pure); ``request.name``
    is the group's name."""
    body: dict[str, Any] = {"count": count, "uuids": list(uuids),
                            "resource_class": request.resource_class}
    for key, value in (("traits", list(request.traits)),
                       ("candidate_nodes", list(request.candidate_nodes)),
                       ("name", request.name), ("owner", request.owner),
                       ("extra", dict(request.extra or {}))):
        if value:
            body[key] = value
    if request.constraints:
        body["constraints"] = request.constraints.to_wire()
    return body


def member_requests(request: reservation.Request, count: int,
                    uuids: Sequence[str]) -> list[reservation.Request]:
    """What each member asks for when the client makes the group (pure):
    the same selection, ``NAME-i`` and the group's marks in extra."""
    names = groups.member_names(request.name, count)
    extra = groups.member_extra(request.extra, request.name, count)
    return [dataclasses.replace(request, name=name, uuid=uuid, extra=extra)
            for name, uuid in zip(names, uuids, strict=True)]


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

    def __init__(self, client: Client, request: reservation.Request,
                 count: int, deadline: budget.Deadline,
                 on_progress: waiting.ProgressCallback | None = None
                 ) -> None:
        try:
            groups.check(count, request.name)
        except groups.GroupError as exc:
            raise exceptions.InvalidArgument(str(exc)) from None
        self.client = client
        self.request = request
        self.count = count
        self.run = reservation.Reservation(client, request, deadline,
                                           on_progress)
        self.uuids = [str(uuidlib.uuid4()) for _ in range(count)]

    def make(self) -> list[Allocation]:
        """All members ``active``; raises on the first failure (the
        caller releases)."""
        if self.client.supports_groups():
            return self._native()
        return self._client_side()

    def _native(self) -> list[Allocation]:
        self.run.expect(self.uuids)
        try:
            made = self.client._post_group(
                wire_body(self.request, self.count, self.uuids),
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
        for member in member_requests(self.request, self.count,
                                      self.uuids):
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
HEADERS = {EXTENSION_HEADER: groups.EXTENSION}
