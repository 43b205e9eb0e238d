"""Create allocations, wait for them, and know every one that was made.

The one implementation behind :meth:`Client.allocate` and ``create
[--count N] [--wait N] [--delete-on-failure]``:

* Each allocation gets its UUID from the client (unless the user chose
  one) and the UUID is recorded *before* the request is sent, so an
  allocation whose create was cut off (timeout, Ctrl-C, SIGTERM) is still
  known and can be deleted or reported.  A create the server clearly
  refused (a 4xx) or that never reached it (connection refused, nothing
  sent in time) made nothing: its UUID is forgotten at once, so it is
  neither deleted nor reported as possibly left.
* Creates, the ``Prefer: wait`` hold and every poll share one
  :class:`~baremetal_allocclient.v1.budget.Deadline`.
* :meth:`Reservation.release` deletes everything recorded, within a
  bounded clean-up budget, and reports what it could not delete.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid as uuidlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from baremetal_allocclient import exceptions, leases
from baremetal_allocclient.v1 import budget, interrupts, queueing, waiting
from baremetal_allocclient.v1.resources import Allocation

if TYPE_CHECKING:
    from baremetal_allocclient.v1.protocol import AllocationClient
    from baremetal_allocclient.v1.request import AllocationRequest

LOG = logging.getLogger(__name__)

#: Seconds a clean-up may take beyond what is left of the time budget, so
#: ``--wait N --delete-on-failure`` still ends within N + 0.5 s.
CLEANUP_GRACE = 0.25
#: Longest clean-up when no time limit applies (after Ctrl-C, SIGTERM or a
#: failure without a limit).
CLEANUP_TIMEOUT = 10.0
#: Pause before deleting again a create that was cut off in flight and
#: looked missing: its request may still have been on its way.
IN_FLIGHT_RECHECK = 0.25


@dataclasses.dataclass
class ReleaseReport:
    """What :meth:`Reservation.release` did, per allocation UUID."""

    deleted: list[str] = dataclasses.field(default_factory=list)
    absent: list[str] = dataclasses.field(default_factory=list)
    failed: list[tuple[str, str]] = dataclasses.field(default_factory=list)


def cleanup_deadline(
    deadline: budget.Deadline, *, interrupted: bool
) -> budget.Deadline:
    """The clean-up budget: what is left plus :data:`CLEANUP_GRACE`, at
    most :data:`CLEANUP_TIMEOUT` (which also applies without a limit or
    after an interruption)."""
    left = deadline.remaining()
    if interrupted or left is None:
        seconds = CLEANUP_TIMEOUT
    else:
        seconds = min(CLEANUP_TIMEOUT, left + CLEANUP_GRACE)
    return budget.Deadline(seconds, clock=deadline.clock)


class Reservation:
    """One create-and-wait operation and everything it may have made."""

    def __init__(
        self,
        client: AllocationClient,
        request: AllocationRequest,
        deadline: budget.Deadline,
        on_progress: waiting.ProgressCallback | None = None,
    ) -> None:
        self.client = client
        #: What each create asks for (``queue``: in the server's line),
        #: its lease recorded from now, so every allocation of this
        #: operation has the same lease end.
        self.request = request.stamped(leases.utcnow())
        self.deadline = deadline
        self.on_progress = on_progress
        #: Earlier attempts of this call that found no free node and were
        #: deleted (waiting for capacity against a server without a line).
        self.retries = 0
        #: UUIDs in creation order, recorded before each create is sent.
        self.attempted: list[str] = []
        self._latest: dict[str, Allocation] = {}

    # -- what exists ----------------------------------------------------

    def made(self) -> list[Allocation]:
        """The latest known state of each allocation the server confirmed."""
        return [self._latest[u] for u in self.attempted if u in self._latest]

    def unconfirmed(self) -> list[str]:
        """UUIDs whose create got no answer: they may exist."""
        return [u for u in self.attempted if u not in self._latest]

    def expect(self, uuids: Sequence[str]) -> None:
        """Record UUIDs a request is about to create (before it is sent),
        so that :meth:`release` deletes them if the answer never comes."""
        self.attempted.extend(uuids)

    def confirm(self, allocations: Sequence[Allocation]) -> None:
        """Record allocations the server confirmed it made."""
        for item in allocations:
            if item.uuid is not None:
                if item.uuid not in self.attempted:
                    self.attempted.append(item.uuid)
                self._latest[item.uuid] = item

    def _record(self, allocations: Sequence[Allocation]) -> None:
        for item in allocations:
            if item.uuid in self._latest:
                self._latest[str(item.uuid)] = item

    def _report(self) -> None:
        if self.on_progress is None:
            return
        known = [
            self._latest.get(u) or Allocation(uuid=u) for u in self.attempted
        ]
        pending = sum(1 for a in known if not waiting.is_settled(a))
        self.on_progress(
            waiting.Progress(
                elapsed=self.deadline.elapsed(), polls=0, pending=pending,
                finished=len(known) - pending, allocations=tuple(known),
            )
        )

    # -- steps ----------------------------------------------------------

    def create(self, count: int, *, hold: bool) -> list[Allocation]:
        """Create ``count`` allocations; ``hold`` asks the server to
        answer a single create once it settled (``Prefer: wait``)."""
        prefer = waiting.PREFER_WAIT if hold and count == 1 else None
        self._discover()
        for _ in range(count):
            uuid = self.request.uuid or str(uuidlib.uuid4())
            self.attempted.append(uuid)
            self._report()
            try:
                made = self._create_one(uuid, prefer)
            except exceptions.ClientError as exc:
                if not exc.outcome_unknown:
                    # Refused (4xx) or never received: nothing was made.
                    self.attempted.remove(uuid)
                raise
            # A server that ignores the UUID field (none known) still
            # gets its own UUID used from here on.
            self.attempted[-1] = made.uuid or uuid
            self._latest[self.attempted[-1]] = made
        self._report()
        return self.made()

    def _discover(self) -> None:
        """Read what the server offers (``GET /v1``, once per client)
        before any UUID is recorded, when the create needs it: an
        interruption meanwhile then leaves nothing to report."""
        if self.request.queue or self.request.constraints:
            with budget.bounded(self.deadline):
                self.client.supports_constraints()

    def _create_one(self, uuid: str, prefer: float | None) -> Allocation:
        return self.client.create_allocation(
            dataclasses.replace(self.request, uuid=uuid),
            prefer_wait=prefer, deadline=self.deadline,
        )

    def wait(self) -> list[Allocation]:
        """Wait until all settle within the deadline; return them.

        AllocationFailed and WaitTimeout propagate after the latest
        states were recorded (see :meth:`made`).
        """
        pending = self.made()
        try:
            if len(pending) == 1:
                done = [
                    self.client.wait_for_allocation(
                        pending[0], deadline=self.deadline,
                        on_progress=self.on_progress,
                    )
                ]
            else:
                done = self.client.wait_for_allocations(
                    pending, deadline=self.deadline,
                    on_progress=self.on_progress,
                )
        except exceptions.AllocationFailed as exc:
            self._record(exc.results or (exc.allocation,))
            raise
        except exceptions.WaitTimeout as exc:
            self._record(exc.results)
            raise
        self._record(done)
        return done

    def settle_one(self, *, retry_capacity: bool = False) -> Allocation:
        """Create one allocation and wait until it is ``active``.

        ``retry_capacity`` (waiting for capacity on a server without a
        line): an allocation that failed only because no node was free is
        deleted and, after a pause (backoff with full jitter), created
        again, until the budget does not allow another attempt
        (WaitTimeout).  First come, first served is not guaranteed so;
        a warning says so once.
        """
        pauses = queueing.pauses(self.client._rng)
        while True:
            self.create(1, hold=True)
            try:
                return self.wait()[0]
            except exceptions.AllocationFailed as exc:
                if not (retry_capacity
                        and queueing.is_capacity_failure(exc.last_error)):
                    raise
                self._start_over(next(pauses), exc)

    def _start_over(self, pause: float,
                    failure: exceptions.AllocationFailed) -> None:
        """Delete the allocation that found no node and pause before the
        next attempt; WaitTimeout when the budget has no room for it
        (``failure`` again when the delete failed: nothing may leak)."""
        if self.retries == 0:
            LOG.warning("%s", queueing.UNFAIR)
        report = self.release()
        if report.failed:
            raise failure
        if not self.deadline.allows(pause + budget.FINAL_POLL):
            raise exceptions.WaitTimeout(
                [failure.allocation], self.deadline.seconds or 0.0)
        LOG.info("No free node for allocation %s; asking again in %.1f s",
                 failure.allocation.ident, pause)
        self.attempted.clear()
        self._latest.clear()
        self.retries += 1
        self.client.sleep(pause)
        # The next attempt is a new allocation: its lease starts with it,
        # as one that waited in the server's line starts when served.
        fresh = leases.restarted(self.request.extra, leases.utcnow())
        if fresh is not None:
            self.request = dataclasses.replace(self.request, extra=fresh)

    def release(self, *, interrupted: bool = False) -> ReleaseReport:
        """Delete every allocation this operation may have made.

        Bounded by :func:`cleanup_deadline`; a second Ctrl-C (or SIGTERM)
        stops it.
        What could not be deleted is in ``failed`` with the reason.
        """
        deadline = cleanup_deadline(self.deadline, interrupted=interrupted)
        report = ReleaseReport()
        in_flight = set(self.unconfirmed())
        todo = list(self.attempted)
        for index, uuid in enumerate(todo):
            try:
                if self._delete(uuid, deadline, uuid in in_flight):
                    report.deleted.append(uuid)
                else:
                    report.absent.append(uuid)
            except exceptions.ClientError as exc:
                report.failed.append((uuid, str(exc)))
            except (KeyboardInterrupt, exceptions.Terminated):
                report.failed.extend(
                    (left, "clean-up interrupted") for left in todo[index:]
                )
                break
        return report

    def _delete(
        self, uuid: str, deadline: budget.Deadline, in_flight: bool
    ) -> bool:
        deleted = self.client.delete_allocation(
            uuid, ignore_missing=True, deadline=deadline
        )
        if deleted or not in_flight or not deadline.allows(
            IN_FLIGHT_RECHECK
        ):
            return deleted
        # The create may still have been on its way to the server.
        time.sleep(IN_FLIGHT_RECHECK)
        return self.client.delete_allocation(
            uuid, ignore_missing=True, deadline=deadline
        )


def allocate(
    client: AllocationClient, request: AllocationRequest, *,
    timeout: float | None = waiting.DEFAULT_TIMEOUT,
    on_progress: waiting.ProgressCallback | None = None,
) -> Allocation:
    """The work of :meth:`Client.allocate` (see there): one allocation
    made ``active``, or nothing left behind."""
    deadline = client.deadline(timeout)
    with budget.bounded(deadline), interrupts.sigterm_raises():
        in_line = (request.queue and request.node is None
                   and client.supports_queue())
        run = Reservation(client,
                          dataclasses.replace(request, queue=in_line),
                          deadline, on_progress)
        try:
            return run.settle_one(
                retry_capacity=request.queue and not in_line)
        except BaseException as exc:
            report = run.release()
            for ident, reason in report.failed:
                LOG.warning(
                    "Could not delete allocation %s after a failed "
                    "allocate(): %s", ident, reason,
                )
            if isinstance(exc, exceptions.Terminated):
                interrupts.finish_termination(exc)
            raise
