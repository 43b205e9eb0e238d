"""One poller of the change log per process: it hands cursors to new
changes, reads what was sequenced (by this process or another one) and
publishes it to the hub, and brings each new watcher from its cursor to
the hub's position before the hub sends it anything newer.

Only this thread reads the log for the hub, so what the hub is given is
in cursor order with no gap: a watcher added at position ``P`` (its
catch-up read up to ``P``) is added before the batch after ``P``.  With
no watcher in the process it rounds every ``idle_interval`` seconds
(sequencing and pruning still happen, for the watchers of other
processes) and skips what it did not need to read.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from dataclasses import dataclass

from baremetal_allocclient.server.allocation.watch import events, log
from baremetal_allocclient.server.allocation.watch.hub import (
    Hub,
    Watcher,
    chunk,
)
from baremetal_allocclient.server.db.engine import (
    Database,
    is_lost_race,
    is_unavailable,
)

LOG = logging.getLogger(__name__)
#: Sequencing rounds at most per poll (a burst is not sequenced forever
#: before anything is published).
_SEQUENCE_ROUNDS = 10


@dataclass(frozen=True)
class FeedOptions:
    """How often the feed polls and how long the log keeps changes."""

    interval: float = 0.05
    idle_interval: float = 1.0
    retention: float = 3600.0
    prune_interval: float = 60.0


@dataclass(frozen=True)
class Joining:
    """A watcher waiting for its catch-up; ``head``: its response's head
    and hello line."""

    watcher: Watcher
    head: bytes


class Feed:
    """The poller thread of one process."""

    def __init__(self, db: Database, hub: Hub,
                 options: FeedOptions = FeedOptions()) -> None:
        self.db = db
        self.hub = hub
        self.options = options
        self.position: int | None = None
        self._joining: collections.deque[Joining] = collections.deque()
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._pruned_at = 0.0
        self._thread = threading.Thread(target=self._run, name="watch-feed",
                                        daemon=True)

    def start(self) -> None:
        self.hub.start()
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        self._thread.join(timeout=5)
        self.hub.stop()

    def join(self, watcher: Watcher, head: bytes) -> None:
        """Bring ``watcher`` (reserved in the hub) up to date and give it
        to the hub."""
        self._joining.append(Joining(watcher, head))
        self._wake.set()

    def _run(self) -> None:
        while not self._stopped.is_set():
            busy = self.hub.count() > 0 or bool(self._joining)
            self._wake.wait(self.options.interval if busy
                            else self.options.idle_interval)
            self._wake.clear()
            if self._stopped.is_set():
                return
            try:
                self.round(time.monotonic())
            except Exception as exc:
                if is_unavailable(exc):
                    LOG.warning("Watch feed: database unavailable")
                elif is_lost_race(exc):  # rolled back; the next round
                    LOG.warning("Watch feed: a concurrent transaction "
                                "won (%s); trying again", type(exc).__name__)
                else:
                    LOG.exception("Watch feed round failed")

    def round(self, now: float) -> None:
        """Sequence, catch the joining watchers up, publish."""
        for _ in range(_SEQUENCE_ROUNDS):
            if not log.pending(self.db) or not log.sequence(self.db):
                break
        if now - self._pruned_at >= self.options.prune_interval:
            self._pruned_at = now
            log.prune(self.db, self.options.retention)
        if self.position is None or (
                self.hub.count() == 0 and not self._joining):
            self.position = log.position(self.db).last
            return
        while self._joining:
            # Taken off only once caught up: a round the database fails
            # leaves it for the next one.
            self._catch_up(self._joining[0], self.position)
            self._joining.popleft()
        while True:
            rows = log.read(self.db, self.position)
            if not rows:
                return
            batch = [events.event(row) for row in rows]
            self.position = batch[-1].cursor
            self.hub.publish(batch, self.position)
            if len(rows) < log.BATCH:
                return

    def _catch_up(self, joining: Joining, upto: int) -> None:
        """Read ``joining``'s changes from its cursor to ``upto``; a
        catch-up over the hub's buffer limit is cut, and its body ended
        there (the client resumes from the last cursor it got)."""
        watcher = joining.watcher
        first = bytearray(joining.head)
        lines = bytearray()
        budget = self.hub.buffer_limit // 2
        end = False
        after = watcher.cursor
        while after < upto and not end:
            rows = log.read(self.db, after, upto)
            if not rows:
                break
            for row in rows:
                event = events.event(row)
                after = event.cursor
                if watcher.filter.matches(event):
                    lines += event.line
                if len(lines) > budget:
                    end = True
                    break
        watcher.cursor = after if end else max(watcher.cursor, upto)
        if lines:
            first += chunk(bytes(lines))
        self.hub.add(watcher, bytes(first), end)
