"""Waiting for allocations to leave ``allocating``.

Allocations usually settle within tens of milliseconds, sometimes seconds
under load, so polling starts fast and backs off exponentially to a cap
(:func:`poll_schedule`).  Time is injected (``clock``, ``sleep``) so the
logic is tested without sleeping.

Waiting for many allocations costs one list request per poll round rather
than one GET per allocation: Ironic's ``GET /v1/allocations`` has no UUID
filter, so each round lists ``state=allocating`` with ``fields=uuid`` (narrowed
by resource class when all pending allocations share one).  Allocations
missing from that list have settled; they are fetched in as few requests as
possible (one list per resource class, newest first, or a GET when only one
settled), which happens only in rounds where something settled.  A single
pending allocation is simply polled with GET.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol

from baremetal_allocclient import exceptions
from baremetal_allocclient.v1 import budget
from baremetal_allocclient.v1.resources import Allocation

#: Default seconds to wait: generous for a loaded conductor, yet finite.
DEFAULT_TIMEOUT = 120.0
#: First poll delay, growth factor and cap of the poll schedule.
INITIAL_DELAY = 0.05
BACKOFF_FACTOR = 2.0
MAX_DELAY = 2.0

#: Longest a create asks the server to hold its answer until the allocation
#: settled (``Prefer: wait``); the reference server's own default ceiling.
PREFER_WAIT = 10.0

ACTIVE = "active"
ERROR = "error"
ALLOCATING = "allocating"

Clock = Callable[[], float]
Sleep = Callable[[float], None]


def prefer_wait_for(timeout: float | None) -> float:
    """How long a create that will be waited on may ask the server to hold
    its answer: the wait's timeout, at most :data:`PREFER_WAIT`."""
    if timeout is None:
        return PREFER_WAIT
    return min(timeout, PREFER_WAIT)


def poll_schedule(
    initial: float = INITIAL_DELAY,
    factor: float = BACKOFF_FACTOR,
    cap: float = MAX_DELAY,
) -> Iterator[float]:
    """Yield delays between polls: exponential from ``initial``, capped.

    The defaults give 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0, ... seconds.
    """
    if initial <= 0 or factor < 1 or cap <= 0:
        raise exceptions.InvalidArgument(
            "poll schedule needs initial > 0, factor >= 1 and cap > 0"
        )
    delay = initial
    while True:
        yield min(delay, cap)
        delay = min(delay * factor, cap)


@dataclasses.dataclass(frozen=True)
class Progress:
    """What a progress callback is told after each poll round.

    Attributes:
        elapsed: seconds since waiting started.
        polls: poll rounds done so far.
        pending: how many allocations are still ``allocating``.
        finished: how many reached ``active`` or ``error``.
        allocations: the latest known state of each allocation, in the
            order they were given.
    """

    elapsed: float
    polls: int
    pending: int
    finished: int
    allocations: tuple[Allocation, ...]


ProgressCallback = Callable[[Progress], None]


def is_settled(allocation: Allocation) -> bool:
    """True once an allocation is ``active`` or ``error``."""
    return allocation.state in (ACTIVE, ERROR)


class AllocationSource(Protocol):
    """The reads waiting needs; the Client provides them."""

    def get(self, uuid: str) -> Allocation:
        """Fetch one allocation (a GET)."""

    def allocating_uuids(self, resource_class: str | None) -> set[str]:
        """UUIDs still ``allocating`` (one list request, uuids only)."""

    def fetch_settled(
        self, allocations: Sequence[Allocation]
    ) -> list[Allocation]:
        """Current state of allocations known to have settled."""


class _Waiter:
    """Deadline and schedule bookkeeping shared by both waits."""

    def __init__(
        self,
        deadline: budget.Deadline,
        sleep: Sleep,
        schedule: Iterable[float] | None,
        on_progress: ProgressCallback | None,
    ) -> None:
        self.deadline = deadline
        self.sleep = sleep
        self.schedule = iter(schedule) if schedule is not None else (
            poll_schedule()
        )
        self.on_progress = on_progress
        self.polls = 0

    @property
    def timeout(self) -> float:
        return self.deadline.seconds or 0.0

    def report(self, latest: Sequence[Allocation]) -> None:
        if self.on_progress is None:
            return
        pending = sum(1 for item in latest if not is_settled(item))
        self.on_progress(
            Progress(
                elapsed=self.deadline.elapsed(),
                polls=self.polls,
                pending=pending,
                finished=len(latest) - pending,
                allocations=tuple(latest),
            )
        )

    def pause(self) -> bool:
        """Sleep until the next poll; False once no poll fits any more."""
        delay = self.deadline.next_pause(next(self.schedule))
        if delay is None:
            return False
        self.sleep(delay)
        return True


def _deadline(
    deadline: budget.Deadline | None, timeout: float | None, clock: Clock
) -> budget.Deadline:
    return deadline if deadline is not None else budget.Deadline(
        timeout, clock=clock
    )


def wait_for_allocation(
    get: Callable[[], Allocation],
    initial: Allocation | None = None,
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
    on_progress: ProgressCallback | None = None,
    clock: Clock,
    sleep: Sleep,
    schedule: Iterable[float] | None = None,
    deadline: budget.Deadline | None = None,
) -> Allocation:
    """Poll one allocation until it settles.

    Args:
        get: fetches the allocation's current state (bounded by the same
            deadline: DeadlineExceeded ends the wait as a timeout).
        initial: the allocation as already known (e.g. just created); when
            it is still allocating the first poll waits one schedule step,
            when absent the first poll happens at once.
        timeout: seconds to wait; ``None`` waits forever.
        deadline: the budget to use instead of ``timeout`` (one shared by
            the create and the wait).

    Returns the ``active`` allocation.

    Raises:
        AllocationFailed: it ended in ``error``.
        WaitTimeout: it was still allocating when the time was up; one
            last poll happens just before the deadline.
    """
    waiter = _Waiter(
        _deadline(deadline, timeout, clock), sleep, schedule, on_progress
    )
    current = initial
    if current is None or current.state is None:
        current = _poll(get, waiter, current)
    while True:
        if current.state == ACTIVE:
            return current
        if current.state == ERROR:
            raise exceptions.AllocationFailed(current, current.last_error)
        waiter.report([current])
        if not waiter.pause():
            raise exceptions.WaitTimeout(
                [current], waiter.timeout, results=[current]
            )
        current = _poll(get, waiter, current)


def _poll(
    get: Callable[[], Allocation],
    waiter: _Waiter,
    current: Allocation | None,
) -> Allocation:
    """One GET; a request cut off by the deadline is a WaitTimeout."""
    waiter.polls += 1
    try:
        return get()
    except exceptions.DeadlineExceeded as exc:
        known = [current] if current is not None else []
        raise exceptions.WaitTimeout(
            known, waiter.timeout, results=known
        ) from exc


def _poll_round(
    source: AllocationSource, waiting: Sequence[Allocation]
) -> list[Allocation]:
    """The fresh state of whatever settled among ``waiting``."""
    if len(waiting) == 1:
        return [source.get(str(waiting[0].uuid))]
    still = source.allocating_uuids(_common_resource_class(waiting))
    settled = [item for item in waiting if item.uuid not in still]
    return source.fetch_settled(settled) if settled else []


def _common_resource_class(pending: Iterable[Allocation]) -> str | None:
    classes = {item.resource_class for item in pending}
    if len(classes) == 1:
        return classes.pop()
    return None


def wait_for_allocations(
    source: AllocationSource,
    allocations: Sequence[Allocation],
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
    raise_on_error: bool = True,
    on_progress: ProgressCallback | None = None,
    clock: Clock,
    sleep: Sleep,
    schedule: Iterable[float] | None = None,
    deadline: budget.Deadline | None = None,
) -> list[Allocation]:
    """Wait until every allocation settles; one list request per round.

    ``allocations`` must carry ``uuid`` and ``state`` (and preferably
    ``resource_class``, which narrows the list).  Returns the final
    allocations in the given order.

    Raises:
        AllocationFailed: ``raise_on_error`` and at least one ended in
            ``error``; raised only after all settled, carrying every
            result, so the caller can release the successful ones.
        WaitTimeout: some were still allocating at the deadline.
    """
    order: list[str] = []
    latest: dict[str, Allocation] = {}
    for item in allocations:
        if item.uuid is None:
            raise exceptions.InvalidArgument(
                "wait_for_allocations needs allocations with a uuid"
            )
        if item.uuid not in latest:
            order.append(item.uuid)
        latest[item.uuid] = item
    waiter = _Waiter(
        _deadline(deadline, timeout, clock), sleep, schedule, on_progress
    )

    def pending() -> list[Allocation]:
        return [latest[u] for u in order if not is_settled(latest[u])]

    while True:
        waiting = pending()
        if not waiting:
            break
        waiter.report([latest[u] for u in order])
        timed_out = exceptions.WaitTimeout(
            waiting, waiter.timeout, results=[latest[u] for u in order]
        )
        if not waiter.pause():
            raise timed_out
        waiter.polls += 1
        try:
            for fresh in _poll_round(source, waiting):
                if fresh.uuid in latest:
                    latest[str(fresh.uuid)] = fresh
        except exceptions.DeadlineExceeded as exc:
            raise timed_out from exc

    results = [latest[u] for u in order]
    if raise_on_error:
        for item in results:
            if item.state == ERROR:
                raise exceptions.AllocationFailed(
                    item, item.last_error, results=results
                )
    return results
