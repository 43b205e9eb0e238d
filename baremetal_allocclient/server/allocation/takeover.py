"""The periodic take-over of dead conductors' allocations.

Every live process runs it.  Each round it judges the registrations
(:func:`liveness.orphaned_affinities`), claims at most as many orphaned
``allocating`` rows not waiting in line as it has free worker slots,
each one with the spec's compare-and-set on ``conductor_affinity``, and
hands the rows it won to its workers.  Two processes racing for a row
cannot both win it, and the workers' own writes are guarded by the new
affinity, so a slow former owner cannot overwrite the result either.

Allocations waiting in line are all taken over in the same round,
whatever the free worker slots (they hold none), and the new owner's
queue rounds run at once: they fail the ones past their queue deadline
and serve the others, in their place (the line is ordered by id, which a
take-over keeps).  Only the owner's queue rounds fail expired ones, so
none may wait for a later round with a dead owner.

The same round also re-queues this process's own ``allocating`` rows that
no worker here holds any more (a failure could not even be recorded, or
a restart had more leftovers than slots), so nothing stays ``allocating``
while the process lives.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable

from baremetal_allocclient.server.allocation import conductors
from baremetal_allocclient.server.allocation.liveness import (
    orphaned_affinities,
    takeover_plan,
)
from baremetal_allocclient.server.allocation.periodic import Periodic
from baremetal_allocclient.server.allocation.workers import AllocationWorkers
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import utcnow

LOG = logging.getLogger(__name__)

# Own rows younger than this are left alone by the re-queue: the request
# that stored one may not have handed it to a worker yet.
OWN_GRACE = datetime.timedelta(seconds=10)


class Takeover:
    """Runs :meth:`run_once` every ``interval`` seconds in a thread."""

    def __init__(
        self,
        db: Database,
        workers: AllocationWorkers,
        heartbeat_timeout: float,
        interval: float,
        wake_queue: Callable[[], None] | None = None,
    ) -> None:
        self._db = db
        self._wake_queue = wake_queue
        self._workers = workers
        self.me = workers.affinity
        self.timeout = datetime.timedelta(seconds=heartbeat_timeout)
        self.interval = interval
        self._periodic = Periodic("takeover", interval, self.run_once,
                                  "Take-over round")

    def start(self) -> None:
        """Start the periodic thread (no-op when the interval is 0)."""
        if self.interval <= 0:
            LOG.info("Take-over of dead conductors' allocations disabled")
            return
        LOG.info(
            "Taking over dead conductors' allocations every %g s (dead "
            "after %g s without heartbeat)", self.interval,
            self.timeout.total_seconds(),
        )
        self._periodic.start()

    def stop(self) -> None:
        """Stop after the current round."""
        self._periodic.stop()

    def run_once(self) -> int:
        """One round; returns how many allocations were claimed."""
        claimed = self._take_over_dead()
        self._workers.recorder.took_over(claimed)
        claimed += self._requeue_own()
        return claimed

    def _take_over_dead(self) -> int:
        counts = conductors.allocating_affinities(self._db)
        if not any(a != self.me for a in counts):
            return 0
        rows, now = conductors.conductors_and_now(self._db)
        orphans = orphaned_affinities(counts, rows, now, self.timeout,
                                      self.me)
        if not orphans:
            return 0
        claimed = self._claim_waiting(orphans)
        running = conductors.allocating_affinities(self._db, waiting=False)
        plan = takeover_plan({a: running[a] for a in orphans if a in running},
                             self._workers.free_slots())
        for dead, count in plan:
            for allocation_id, uuid in conductors.allocating_ids(
                self._db, dead, count, waiting=False
            ):
                if self._periodic.stopping:
                    return claimed
                if not self._workers.try_reserve_slot():
                    return claimed
                if self._claim_one(allocation_id, uuid, dead):
                    self._workers.submit(allocation_id, uuid)
                    claimed += 1
                else:
                    self._workers.release_slot()
        return claimed

    def _claim_one(self, allocation_id: int, uuid: str,
                   dead: str | None) -> bool:
        try:
            won = conductors.take_over(self._db, allocation_id, uuid, dead,
                                       self.me)
        except BaseException:
            self._workers.release_slot()
            raise
        if won:
            LOG.info("Took over allocation %s from dead conductor %s",
                     uuid, dead)
        return won

    def _claim_waiting(self, orphans: list[str | None]) -> int:
        """Claim every orphaned allocation waiting in line, however many:
        a waiting allocation holds no worker slot, and only its owner's
        queue rounds serve it or fail it at its deadline, so none may be
        left with a dead owner.  The queue rounds run at once after."""
        claimed = 0
        for dead in orphans:
            for allocation_id, uuid in conductors.allocating_ids(
                self._db, dead, None, waiting=True
            ):
                if self._periodic.stopping:
                    break
                if conductors.take_over(self._db, allocation_id, uuid, dead,
                                        self.me):
                    LOG.info("Took over allocation %s from dead conductor "
                             "%s (waiting in line)", uuid, dead)
                    claimed += 1
        if claimed and self._wake_queue is not None:
            self._wake_queue()
        return claimed

    def _requeue_own(self) -> int:
        free = self._workers.free_slots()
        if free <= 0:
            return 0
        requeued = 0
        # Rows queued here are among the oldest; look past them.  Rows
        # waiting in line are the queue rounds' (conductor/queueing.py).
        limit = free + self._workers.inflight_count()
        for allocation_id, uuid in conductors.allocating_ids(
            self._db, self.me, limit, created_before=utcnow() - OWN_GRACE,
            waiting=False,
        ):
            if self._workers.is_inflight(allocation_id):
                continue
            if not self._workers.try_reserve_slot():
                break
            LOG.info("Re-queueing own allocation %s", uuid)
            self._workers.submit(allocation_id, uuid)
            requeued += 1
        return requeued
