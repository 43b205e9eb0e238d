"""Progress of long waits, on a terminal only.

Scripts read stdout and often capture stderr into logs; a redrawn status
line would only clutter them. So the reporter exists only when stderr is a
TTY, and it writes to stderr alone.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from baremetal_allocclient.v1 import Progress


def summary(states: Iterable[str | None], elapsed: float) -> str:
    """``"waiting 12s: 2 active, 1 allocating"`` (pure, for the status)."""
    counts = collections.Counter(state or "unknown" for state in states)
    parts = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
    return f"waiting {elapsed:.0f}s: {parts}"


class TtyProgress:
    """Redraws one status line on a terminal; ``close`` clears it."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._width = 0

    def __call__(self, progress: Progress) -> None:
        """Show the states of the allocations being waited for."""
        self._draw(
            summary(
                (a.state for a in progress.allocations), progress.elapsed
            )
        )

    def _draw(self, line: str) -> None:
        padding = " " * max(0, self._width - len(line))
        self._stream.write("\r" + line + padding)
        self._stream.flush()
        self._width = len(line)

    def close(self) -> None:
        """Erase the status line, leaving the terminal as it was."""
        if self._width:
            self._stream.write("\r" + " " * self._width + "\r")
            self._stream.flush()
            self._width = 0


def for_stream(stream: TextIO) -> TtyProgress | None:
    """A reporter when ``stream`` is a terminal, else None (no progress)."""
    try:
        interactive = stream.isatty()
    except (AttributeError, ValueError):
        interactive = False
    return TtyProgress(stream) if interactive else None
