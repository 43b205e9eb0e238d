"""SIGTERM as an exception while allocations may need releasing.

SIGINT already arrives as :class:`KeyboardInterrupt`, so ``try/except
BaseException`` blocks get to release what they made.  SIGTERM's default
action ends the process at once, leaving a reserved node behind.  Inside
:func:`sigterm_raises` a SIGTERM raises
:class:`~baremetal_allocclient.exceptions.Terminated` instead; after
cleaning up, :func:`finish_termination` ends the process the way SIGTERM
would have (killed by SIGTERM: exit status 143 in a shell).

Only the main thread can install signal handlers, and a handler someone
else installed is left alone: then nothing changes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from baremetal_allocclient import exceptions

#: Exit status of a process ended by a signal, as shells report it.
SIGNAL_EXIT_BASE = 128


def _raise_terminated(signum: int, _frame: FrameType | None) -> None:
    raise exceptions.Terminated(signum)


def _can_install() -> bool:
    return (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    )


@contextlib.contextmanager
def sigterm_raises() -> Iterator[bool]:
    """Turn SIGTERM into ``Terminated`` for the duration; yield whether
    the handler was installed (main thread and default disposition)."""
    if not _can_install():
        yield False
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield True
    finally:
        signal.signal(signal.SIGTERM, previous)


def exit_status(error: BaseException) -> int:
    """The shell exit status an interruption stands for: 130 or 143."""
    if isinstance(error, exceptions.Terminated):
        return SIGNAL_EXIT_BASE + error.signum
    return SIGNAL_EXIT_BASE + signal.SIGINT


def finish_termination(error: exceptions.Terminated) -> None:
    """End the process as the deferred SIGTERM would have."""
    signal.signal(error.signum, signal.SIG_DFL)
    os.kill(os.getpid(), error.signum)
