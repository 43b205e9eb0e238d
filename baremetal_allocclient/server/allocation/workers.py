"""The allocation worker pool: finishes ``allocating`` allocations.

The pool is bounded.  The API takes a slot *before* it writes the
allocation row (:meth:`AllocationWorkers.try_reserve_slot`), so a request
the pool could not accept is refused with 503 and leaves nothing behind.
The take-over task claims slots the same way before it claims rows.

A worker that loses the database keeps the row ``allocating`` and tries
again with a growing pause; on stop it leaves the row for the next start
or for another process's take-over.  Nothing is marked ``error`` because
the database was unreachable.
"""

from __future__ import annotations

import datetime
import logging
import random
import threading
import time
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor

from sqlalchemy import select

from baremetal_allocclient.server.allocation import (
    conductors,
    matching,
    reservation,
    selection,
)
from baremetal_allocclient.server.allocation.backends.base import (
    Backend,
    Job,
    Settled,
)
from baremetal_allocclient.server.allocation.backends.database import (
    DatabaseBackend,
)
from baremetal_allocclient.server.allocation.states import ACTIVE, ALLOCATING
from baremetal_allocclient.server.db.allocation_row import AnyAllocation
from baremetal_allocclient.server.db.engine import (
    Database,
    is_lost_race,
    is_unavailable,
    short_reason,
)
from baremetal_allocclient.server.db.models import Allocation
from baremetal_allocclient.server.domain.recording import (
    NOT_RECORDED,
    Change,
    Recorder,
)

LOG = logging.getLogger(__name__)


def _retryable(exc: BaseException) -> bool:
    """An attempt that changed nothing and may succeed later: the
    database was unavailable, or a concurrent transaction won a race
    (a deadlock, or on Galera a certification conflict at COMMIT).  The
    attempt's compare-and-sets make running it again harmless."""
    return is_unavailable(exc) or is_lost_race(exc)


def _why(exc: BaseException) -> str:
    return ("Database unavailable" if is_unavailable(exc)
            else "Lost a race with a concurrent transaction")

#: ``last_error`` of an allocation failed by a bug: the exception's text
#: (SQL, values) goes to the log only, never to users.
UNEXPECTED_FAILURE = ("Unexpected internal error during allocation; the "
                      "details are in the server's log.")
# Pause before retrying an allocation after the database was unreachable.
RETRY_FIRST = 0.5
RETRY_MAX = 5.0


def _outcome(
    future: Future[Settled | None] | None, wait: float
) -> Settled | None:
    """The future's result if it arrives within ``wait`` seconds."""
    if future is None:
        return None
    futures.wait([future], timeout=max(wait, 0.0))
    if not future.done() or future.cancelled():
        return None
    return future.result()


class _Slots:
    """A counting limit whose free count can be read (unlike Semaphore)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._used = 0
        self._cond = threading.Condition()

    def try_acquire(self) -> bool:
        with self._cond:
            if self._used >= self.capacity:
                return False
            self._used += 1
            return True

    def acquire(self, stop: threading.Event) -> bool:
        """Wait for a slot; False when ``stop`` is set first."""
        with self._cond:
            while self._used >= self.capacity:
                if stop.is_set():
                    return False
                self._cond.wait(0.5)
            self._used += 1
            return True

    def release(self) -> None:
        with self._cond:
            if self._used <= 0:
                raise RuntimeError("slot released more often than taken")
            self._used -= 1
            self._cond.notify()

    def free(self) -> int:
        with self._cond:
            return self.capacity - self._used


class AllocationWorkers:
    """A bounded thread pool processing allocations owned by ``affinity``."""

    def __init__(
        self,
        db: Database,
        affinity: str,
        workers: int = 8,
        backlog: int = 1000,
        rng: random.Random | None = None,
        allocation_delay: float = 0.0,
        backend: Backend | None = None,
        recorder: Recorder = NOT_RECORDED,
    ) -> None:
        self._db = db
        #: Where settled and failed allocations are counted (the line's
        #: rounds count theirs here too).
        self.recorder = recorder
        # Selection and claiming (database by default, or Placement).
        self.backend: Backend = backend or DatabaseBackend(db, rng)
        self.affinity = affinity
        self._pool = ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="allocation"
        )
        self._slots = _Slots(workers + backlog)
        # Test aid (serve --allocation-delay): keeps rows ``allocating``
        # long enough to kill the process holding them.
        self._delay = allocation_delay
        self._stopping = threading.Event()
        self._inflight: set[int] = set()
        self._inflight_lock = threading.Lock()

    # -- admission -----------------------------------------------------
    def try_reserve_slot(self) -> bool:
        """Claim room for one more allocation without blocking."""
        if self._stopping.is_set():
            return False
        return self._slots.try_acquire()

    def release_slot(self) -> None:
        """Give back a slot whose allocation was never stored."""
        self._slots.release()

    def abandon(self, allocation_id: int, allocation_uuid: str) -> None:
        """Give back the slot of a stored allocation that an unexpected
        error kept from reaching a worker, and fail it as a worker
        failed by a bug would (call it while handling that error).  If
        even the failure cannot be recorded, the take-over round
        re-queues the row (its own ``allocating`` rows no worker
        holds)."""
        self._slots.release()
        self._fail_unexpectedly(allocation_id, allocation_uuid)

    @property
    def stopping(self) -> bool:
        """Whether this pool is stopping (it takes nothing new)."""
        return self._stopping.is_set()

    def free_slots(self) -> int:
        """How many more allocations could be accepted right now."""
        return 0 if self._stopping.is_set() else self._slots.free()

    def submit(
        self, allocation_id: int, allocation_uuid: str,
        job: Job | None = None,
    ) -> Future[Settled | None] | None:
        """Process a stored allocation; the caller holds a slot.

        ``job`` is what the API just stored, which spares the worker one
        read of the row (resume and take-over pass none).  The future
        completes when this process is done with the allocation, with how
        it settled (None: unknown, or left ``allocating`` for a retry
        elsewhere); the submit returns None when stopping.
        """
        with self._inflight_lock:
            self._inflight.add(allocation_id)
        try:
            return self._pool.submit(self._run, allocation_id,
                                     allocation_uuid, job)
        except RuntimeError:  # pool shut down: stopping
            self._done(allocation_id)
            LOG.info("Stopping: allocation %s left for resume or "
                     "take-over", allocation_id)
            return None
        except Exception:  # the pool took nothing: as in abandon()
            self._done(allocation_id)
            self._fail_unexpectedly(allocation_id, allocation_uuid)
            raise

    def settle(
        self, allocation_id: int, job: Job, wait: float
    ) -> Settled | None:
        """Process a stored allocation and wait up to ``wait`` seconds for
        how it settled (None: not within ``wait``, or unknown); the
        caller holds a slot.

        With a backend that does not block, the calling (request) thread
        makes the attempt itself: handing the job to a worker and being
        woken by it again are two thread switches, about a tenth of the
        server's CPU per allocation under load.  If the database is
        unavailable, a worker takes over and retries as usual.
        """
        deadline = time.monotonic() + wait
        if self.backend.blocking or self._delay or self._stopping.is_set():
            return _outcome(
                self.submit(allocation_id, job.allocation_uuid, job), wait
            )
        with self._inflight_lock:
            self._inflight.add(allocation_id)
        try:
            settled = self.process(allocation_id, job.allocation_uuid, job)
        except Exception as exc:
            if not _retryable(exc):
                self._fail_unexpectedly(allocation_id, job.allocation_uuid)
                self._done(allocation_id)
                return None
            LOG.warning(
                "%s while processing allocation %s, handing it to a "
                "worker: %s", _why(exc), allocation_id, short_reason(exc),
            )
            try:  # the slot and the in-flight mark go with the job
                retry = self._pool.submit(self._run, allocation_id,
                                          job.allocation_uuid, job)
            except RuntimeError:  # pool shut down: stopping
                self._done(allocation_id)
                return None
            except Exception:  # the pool took nothing
                self._done(allocation_id)
                self._fail_unexpectedly(allocation_id, job.allocation_uuid)
                return None
            return _outcome(retry, deadline - time.monotonic())
        self._done(allocation_id)
        return settled

    def is_inflight(self, allocation_id: int) -> bool:
        """True while this process has the allocation queued or running."""
        with self._inflight_lock:
            return allocation_id in self._inflight

    def inflight_count(self) -> int:
        """How many allocations this process has queued or running."""
        with self._inflight_lock:
            return len(self._inflight)

    def resume(self, created_before: datetime.datetime | None = None) -> int:
        """Queue the allocations this conductor left in ``allocating``.

        Waits for free slots rather than refusing, so a restart with more
        leftovers than slots still resumes every one (call it from a
        background thread).  Allocations already queued here are skipped.
        """
        resumed = 0
        for allocation_id, uuid in conductors.allocating_ids(
            self._db, self.affinity, limit=None,
            created_before=created_before,
        ):
            if self.is_inflight(allocation_id):
                continue
            if not self._slots.acquire(self._stopping):
                break
            self.submit(allocation_id, uuid)
            resumed += 1
        if resumed:
            LOG.info("Resuming %d unfinished allocation(s)", resumed)
        return resumed

    def shutdown(self) -> None:
        """Finish running allocations; queued ones stay ``allocating``
        in the database for the next start or another process."""
        self._stopping.set()
        self._pool.shutdown(wait=True, cancel_futures=True)

    # -- processing ----------------------------------------------------
    def _done(self, allocation_id: int) -> None:
        with self._inflight_lock:
            self._inflight.discard(allocation_id)
        self._slots.release()

    def _run(
        self, allocation_id: int, allocation_uuid: str,
        job: Job | None = None,
    ) -> Settled | None:
        try:
            if self._stopping.wait(self._delay):
                return None
            pause = RETRY_FIRST
            while True:
                try:
                    return self.process(allocation_id, allocation_uuid, job)
                except Exception as exc:
                    if not _retryable(exc):
                        raise
                    LOG.warning(
                        "%s while processing allocation %s, retrying in "
                        "%.1f s: %s", _why(exc), allocation_id, pause,
                        short_reason(exc),
                    )
                if self._stopping.wait(pause):
                    LOG.info("Stopping: allocation %s left for resume or "
                             "take-over", allocation_id)
                    return None
                pause = min(pause * 2, RETRY_MAX)
        except Exception:
            self._fail_unexpectedly(allocation_id, allocation_uuid)
            return None
        finally:
            self._done(allocation_id)

    def _fail_unexpectedly(
        self, allocation_id: int, allocation_uuid: str
    ) -> None:
        """Record that a bug failed the allocation (called while handling
        the exception, which goes to the log)."""
        LOG.exception("Allocation %s failed unexpectedly", allocation_uuid)
        try:
            if reservation.fail_allocation(
                self._db,
                allocation_id,
                allocation_uuid,
                self.affinity,
                UNEXPECTED_FAILURE,
            ):
                self.recorder.failed("unexpected")
        except Exception:
            LOG.exception("Could not record failure of %s",
                          allocation_uuid)

    def process(
        self, allocation_id: int, allocation_uuid: str,
        job: Job | None = None,
    ) -> Settled | None:
        """Hand an allocation this conductor owns to the backend, which
        selects and reserves a node or records why there is none.

        Without ``job`` the row is read first.  With it, the read is not
        needed: the reservation and the failure record only change a row
        that is still ``allocating`` under this conductor's affinity.
        """
        if job is not None:
            return self._counted(job, self.backend.allocate(job))
        with self._db.read() as session:
            allocation = session.scalars(
                select(Allocation).where(Allocation.id == allocation_id,
                                         Allocation.uuid == allocation_uuid)
            ).first()
        if (
            allocation is None
            or allocation.state != ALLOCATING
            or allocation.conductor_affinity != self.affinity
        ):
            return None
        job = self.job_for(allocation)
        return self._counted(job, self.backend.allocate(job))

    def _counted(self, job: Job, settled: Settled | None
                 ) -> Settled | None:
        """``settled``, counted (how long since the create; a failure by
        what emptied the set)."""
        if settled is not None:
            self.recorder.settled(settled.state, job.created_at,
                                  job.queue_deadline is not None,
                                  settled.updated_at)
            if settled.state != ACTIVE:
                self.recorder.failed(settled.step or "other")
            self.recorder.changed(Change(
                job.allocation_uuid, job.request.owner, ALLOCATING,
                settled.state, settled.node_uuid, "worker"))
        return settled

    def job_for(self, allocation: AnyAllocation) -> Job:
        """The backend's job for an allocation row of this conductor."""
        request = matching.request_of(allocation)
        return Job(allocation.id, allocation.uuid, request,
                   tuple(selection.active_filters(request)), self.affinity,
                   allocation.queue_deadline, allocation.created_at)

