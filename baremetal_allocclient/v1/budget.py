"""One time budget for an operation made of many requests.

``create --wait N`` and ``allocate(timeout=N)`` promise to end within N
seconds, counted from the first request to the last.  A :class:`Deadline`
is created once, when the operation starts, and handed to every request
it makes: the ``Prefer: wait`` hold of the create, each poll and each
retry.  The transport sends each request with a timeout no longer than
what is left (:meth:`Deadline.request_timeout`), retries only while the
delay fits (:meth:`Deadline.allows`), and refuses to start a request once
nothing is left (:class:`~baremetal_allocclient.exceptions.DeadlineExceeded`).

An operation also makes requests it does not pass a deadline to: the
extension discovery (``GET /v1``), version negotiation (``GET /``), the
node listing of a client-side selection.  While an operation runs, its
deadline is *the current one* (:func:`bounded`, :func:`current`): the
transport bounds every request sent without an explicit deadline by it,
so one deadline covers every request of the operation.

The decisions are pure functions of the clock, which is injected.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import threading
import time
from collections.abc import Callable, Iterator

from baremetal_allocclient import exceptions

Clock = Callable[[], float]

#: Seconds a ``Prefer: wait`` hold stays below the time left, so the held
#: answer arrives before the client stops listening for it.
HOLD_MARGIN = 0.5
#: Seconds kept back for one last poll at the end of a wait.
FINAL_POLL = 0.2
#: Shortest pause worth taking before a poll.
MIN_PAUSE = 0.01


class Deadline:
    """A point in time after which an operation sends nothing more.

    Args:
        seconds: the budget; ``None`` means no limit.
        clock: monotonic seconds (injected by tests).
    """

    def __init__(
        self, seconds: float | None, *, clock: Clock = time.monotonic
    ) -> None:
        if seconds is not None and (math.isnan(seconds) or seconds < 0):
            raise exceptions.InvalidArgument(
                f"timeout must not be negative, got {seconds!r}"
            )
        if seconds is not None and seconds >= threading.TIMEOUT_MAX:
            # Longer than any wait can be told (about 292 years, infinity
            # included): no limit, not an OverflowError in a wait.
            seconds = None
        self.seconds = seconds
        self.clock = clock
        self.start = clock()

    def __repr__(self) -> str:
        return f"Deadline({self.seconds!r}, remaining={self.remaining()!r})"

    def elapsed(self) -> float:
        """Seconds since the budget started."""
        return self.clock() - self.start

    def remaining(self) -> float | None:
        """Seconds left (never negative), or None without a limit."""
        if self.seconds is None:
            return None
        return max(0.0, self.seconds - self.elapsed())

    def expired(self) -> bool:
        """True once nothing is left of a limited budget."""
        left = self.remaining()
        return left is not None and left <= 0

    def allows(self, delay: float) -> bool:
        """Whether sleeping ``delay`` seconds still leaves time to act."""
        left = self.remaining()
        return left is None or delay < left

    def request_timeout(self, session_timeout: float | None) -> float | None:
        """The timeout of the next request: the session's, at most what
        is left of the budget."""
        left = self.remaining()
        if left is None:
            return session_timeout
        if session_timeout is None:
            return left
        return min(left, session_timeout)

    def hold(self, ceiling: float) -> float | None:
        """How long a server may hold a create (``Prefer: wait``): what
        is left minus :data:`HOLD_MARGIN`, at most ``ceiling``."""
        left = self.remaining()
        if left is None:
            return ceiling
        return min(ceiling, left - HOLD_MARGIN)

    def next_pause(self, delay: float) -> float | None:
        """How long to sleep before the next poll, or None when no poll
        fits any more (less than :data:`FINAL_POLL` left)."""
        left = self.remaining()
        if left is None:
            return delay
        if left < FINAL_POLL + MIN_PAUSE:
            return None
        return min(delay, left - FINAL_POLL)


#: A budget without a limit, for calls made outside any operation.
def unlimited(clock: Clock = time.monotonic) -> Deadline:
    """A deadline that never expires."""
    return Deadline(None, clock=clock)


_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar(
    "baremetal_alloc_deadline", default=None)


def current() -> Deadline | None:
    """The deadline of the operation running in this thread (or task),
    if any (see :func:`bounded`)."""
    return _CURRENT.get()


@contextlib.contextmanager
def bounded(deadline: Deadline | None) -> Iterator[Deadline | None]:
    """Make ``deadline`` the current one for the requests made inside
    (``None`` keeps the current one)."""
    if deadline is None:
        yield current()
        return
    token = _CURRENT.set(deadline)
    try:
        yield deadline
    finally:
        _CURRENT.reset(token)
