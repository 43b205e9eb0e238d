"""One background round every few seconds, for the conductor's periodic
work (take-over, waiting in line, lease expiry).

A round that finds the database unavailable, or loses a race with a
concurrent transaction, is skipped with a warning; any
other failure is logged with its traceback; either way the thread carries
on with the next round.  ``wake`` starts a round at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from baremetal_allocclient.server.db.engine import (
    is_lost_race,
    is_unavailable,
)

LOG = logging.getLogger(__name__)


class Periodic:
    """Runs ``round_`` every ``interval`` seconds in a daemon thread."""

    def __init__(self, name: str, interval: float,
                 round_: Callable[[], object], what: str) -> None:
        self.name = name
        self.interval = interval
        self._round = round_
        self._what = what
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def stopping(self) -> bool:
        """Whether :meth:`stop` was called (long rounds end early)."""
        return self._stop.is_set()

    def start(self) -> None:
        """Start the thread (no-op when the interval is 0)."""
        if self.interval <= 0:
            return
        self._thread = threading.Thread(target=self._loop, name=self.name,
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop after the current round."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()

    def wake(self) -> None:
        """Run a round now rather than at the end of the interval."""
        self._wake.set()

    def _loop(self) -> None:
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self._round()
            except Exception as exc:
                if is_unavailable(exc):
                    LOG.warning("%s skipped, database unavailable",
                                self._what)
                elif is_lost_race(exc):
                    LOG.warning("%s lost a race with a concurrent "
                                "transaction; the next round retries",
                                self._what)
                else:
                    LOG.exception("%s failed", self._what)
