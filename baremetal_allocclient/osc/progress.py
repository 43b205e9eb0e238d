"""Progress of long waits, on a terminal only.

Scripts read stdout and often capture stderr into logs; a redrawn status
line would only clutter them. So the reporter exists only when stderr is a
TTY, and it writes to stderr alone.

The line is drawn as soon as the command starts and redrawn every second
by a background thread, with the time elapsed since the command started
(the ``Prefer: wait`` hold of a create included) and how many allocations
are in each state ("creating" for a create not answered yet).
"""

from __future__ import annotations

import collections
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from baremetal_allocclient.v1 import Progress
    from baremetal_allocclient.v1.resources import Allocation

#: Seconds between redraws.
INTERVAL = 1.0
#: How a create without an answer yet is counted.
CREATING = "creating"


def summary(states: Iterable[str | None], elapsed: float) -> str:
    """``"waiting 12s: 2 active, 1 allocating"`` (pure, for the status)."""
    counts = collections.Counter(state or CREATING for state in states)
    parts = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
    return f"waiting {int(elapsed)}s: {parts}"


def shown_state(allocation: Allocation) -> str | None:
    """The state to show: ``allocating`` becomes ``waiting in line (#N)``
    when the server says the allocation waits in line (pure)."""
    from baremetal_allocclient.v1 import queueing

    place = queueing.position(allocation.raw)
    if allocation.state == "allocating" and place is not None:
        return f"waiting in line (#{place})"
    return allocation.state


def terminal_width(stream: TextIO) -> int:
    """Columns of the terminal behind ``stream`` (``COLUMNS`` or 80 when
    that cannot be asked)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, OSError, ValueError):
        return shutil.get_terminal_size().columns


def fit(line: str, width: int) -> str:
    """``line`` cut to ``width`` characters, ending with "..." when cut
    (pure)."""
    if len(line) <= width:
        return line
    if width <= 3:
        return line[:max(0, width)]
    return line[:width - 3] + "..."


class TtyProgress:
    """Redraws one status line on a terminal; ``close`` clears it.

    Call it with each :class:`~baremetal_allocclient.v1.Progress`; a
    thread redraws the line every :data:`INTERVAL` seconds meanwhile.
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        _clock: Callable[[], float] = time.monotonic,
        _interval: float = INTERVAL,
    ) -> None:
        # _clock and _interval are for tests, not part of the interface.
        self._stream = stream
        self._clock = _clock
        self._start = _clock()
        self._interval = _interval
        self._states: tuple[str | None, ...] = ()
        self._width = 0
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, count: int) -> None:
        """Draw at once (``count`` creates pending) and keep redrawing."""
        self._states = (None,) * count
        self.draw()
        self._thread = threading.Thread(
            target=self._tick, name="progress", daemon=True
        )
        self._thread.start()

    def __call__(self, progress: Progress) -> None:
        """Record the states of the allocations being waited for."""
        self._states = tuple(shown_state(a) for a in progress.allocations)
        self.draw()

    def _tick(self) -> None:
        while not self._stopped.wait(self._interval):
            self.draw()

    def draw(self) -> None:
        """Redraw the line with the current elapsed time and states.

        The line is cut to the terminal's width less one column: a line
        that wrapped would scroll at every redraw instead of replacing
        itself.
        """
        line = fit(summary(self._states, self._clock() - self._start),
                   terminal_width(self._stream) - 1)
        with self._lock:
            if self._stopped.is_set():
                return
            padding = " " * max(0, self._width - len(line))
            self._stream.write("\r" + line + padding)
            self._stream.flush()
            self._width = len(line)

    def close(self) -> None:
        """Stop redrawing and erase the line, leaving the terminal as it
        was."""
        with self._lock:
            self._stopped.set()
            if self._width:
                self._stream.write("\r" + " " * self._width + "\r")
                self._stream.flush()
                self._width = 0
        if self._thread is not None:
            self._thread.join()


def for_stream(stream: TextIO) -> TtyProgress | None:
    """A reporter when ``stream`` is a terminal, else None (no progress)."""
    try:
        interactive = stream.isatty()
    except (AttributeError, ValueError):
        interactive = False
    return TtyProgress(stream) if interactive else None
