"""Queue rounds: serve this process's allocations waiting in line.

Every process that owns waiting allocations (its ``conductor_affinity``)
runs rounds over them, in arrival order: the ones past their queue
deadline are failed, and, in every resource class with a free node, the
others are tried again.  First come, first served holds across processes
because the reservation itself refuses a node that an earlier waiting
allocation matches (``queries.waiting_before``), whoever tries it.

A round runs every ``interval`` seconds, and at once when this process
frees a node (:meth:`QueueRounds.wake`); other processes' releases are
seen on their next round.  Waiting allocations hold no worker slot.
"""

from __future__ import annotations

import datetime
import logging

from sqlalchemy.exc import DBAPIError

from baremetal_allocclient.server.allocation import reservation, selection
from baremetal_allocclient.server.allocation.line import queries, waiting
from baremetal_allocclient.server.allocation.periodic import Periodic
from baremetal_allocclient.server.allocation.states import (
    ACTIVE,
    ALLOCATING,
    ERROR,
)
from baremetal_allocclient.server.allocation.workers import AllocationWorkers
from baremetal_allocclient.server.db.engine import (
    Database,
    is_lost_race,
    short_reason,
)
from baremetal_allocclient.server.db.models import utcnow
from baremetal_allocclient.server.domain.recording import Change

LOG = logging.getLogger(__name__)


class QueueRounds:
    """Runs :meth:`run_once` every ``interval`` seconds or when woken."""

    def __init__(self, db: Database, workers: AllocationWorkers,
                 interval: float = waiting.DEFAULT_INTERVAL,
                 max_wait: float = waiting.DEFAULT_MAX_WAIT) -> None:
        self._db = db
        self._workers = workers
        self.interval = interval
        #: Longest time in line a create may ask for.
        self.max_wait = max_wait
        self._periodic = Periodic("queue", interval, self.run_once,
                                  "Queue round")

    def start(self) -> None:
        """Start the rounds in a thread."""
        self._periodic.start()

    def stop(self) -> None:
        """Stop after the current round."""
        self._periodic.stop()

    def wake(self) -> None:
        """A node may have become free: run a round now."""
        self._periodic.wake()

    def run_once(self) -> int:
        """One round; returns how many waiting allocations settled."""
        settled = 0
        now = utcnow()
        free: dict[str | None, int] = {}
        for allocation_id, uuid, rc, deadline, created in (
            queries.queued_rows(self._db, self._workers.affinity)
        ):
            if self._periodic.stopping:
                break
            if self._workers.is_inflight(allocation_id):
                continue  # a worker has it right now
            try:
                if waiting.expired(deadline, now):
                    settled += self._expire(allocation_id, uuid, rc,
                                            deadline, created)
                    continue
                if rc not in free:
                    free[rc] = queries.free_node_count(self._db, rc)
                if free[rc] <= 0:
                    continue
                outcome = self._workers.process(allocation_id, uuid)
            except DBAPIError as exc:
                if not is_lost_race(exc):
                    raise
                # A concurrent transaction (on Galera, another node's)
                # changed the row first; the next round sees the result.
                LOG.info("Queue round: allocation %s lost a race, next "
                         "round: %s", uuid, short_reason(exc))
                continue
            if outcome is not None:
                settled += 1
                if outcome.state == ACTIVE:
                    free[rc] -= 1
        return settled

    def _expire(self, allocation_id: int, uuid: str, rc: str | None,
                deadline: datetime.datetime,
                created: datetime.datetime) -> int:
        reason = waiting.expiry_reason(rc, created, deadline)
        now = utcnow()
        if reservation.fail_allocation(
            self._db, allocation_id, uuid, self._workers.affinity,
            selection.failure_message(uuid, reason), now,
        ):
            LOG.info("Allocation %s left the line: queue deadline passed",
                     uuid)
            recorder = self._workers.recorder
            recorder.settled(ERROR, created, True, now)
            recorder.failed("queue_deadline")
            recorder.changed(Change(uuid, None, ALLOCATING, ERROR, None,
                                    "line"))
            return 1
        return 0
