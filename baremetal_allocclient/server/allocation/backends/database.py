"""The database backend: select and reserve nodes with SQL alone.

This is the default.  Candidates come from one query applying every
filter; the reservation is a compare-and-set transaction
(:func:`reservation.reserve`), so concurrent workers and processes sharing
the database never give one node to two allocations.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import ColumnElement, select

from baremetal_allocclient.constraints import Order
from baremetal_allocclient.server.allocation import (
    matching,
    reservation,
    selection,
)
from baremetal_allocclient.server.allocation.backends.base import Job, Settled
from baremetal_allocclient.server.allocation.line import waiting
from baremetal_allocclient.server.allocation.placement import model, snapshot
from baremetal_allocclient.server.allocation.states import ACTIVE, ERROR
from baremetal_allocclient.server.db.driver_statements import AnyConnection
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Node, utcnow

LOG = logging.getLogger(__name__)

# How many times all candidates may be taken by concurrent requests before
# the allocation fails; each round searches the database again, and the
# last one waits for locked candidates rather than skipping them.
SEARCH_ROUNDS = 5
#: Seconds the highest node id is reused for picking window positions.  A
#: stale value only skews where windows start: they wrap around, so newer
#: nodes are still found.
TOP_ID_TTL = 1.0


def explain(db: Database, job: Job, tried: int) -> selection.Why:
    """Why no node was found: Ironic's text, and the same with the
    funnel (counting, for an allocation with an owner, only the nodes
    that owner may see)."""
    request = job.request
    with db.read() as session:
        funnel = matching.funnel_counts(
            session, request, matching.visible_to(request.owner))
    return selection.explain_failure(request, funnel, tried)


def no_node(db: Database, job: Job, reason: str) -> Settled | None:
    """No node now: an ordinary allocation fails; one waiting in line
    stays ``allocating`` (None) until its queue deadline, then fails
    saying so."""
    if job.queue_deadline is None:
        return fail(db, job, reason)
    if not waiting.expired(job.queue_deadline, utcnow()):
        LOG.debug("Allocation %s waits in line", job.allocation_uuid)
        return None
    return fail(db, job, waiting.expiry_reason(
        job.request.resource_class, job.created_at, job.queue_deadline),
        step="queue_deadline")


def fail(db: Database, job: Job, reason: str | selection.Why,
         step: str = "other") -> Settled | None:
    """Move the allocation to ``error`` with Ironic's wording and, when
    there is one, the funnel's text for clients that opted in (None: it
    was no longer this conductor's to fail); a plain ``reason`` is
    counted under ``step``."""
    why = selection.Why(reason, step=step) if isinstance(reason, str) \
        else reason
    message = selection.failure_message(job.allocation_uuid, why.ironic)
    detail = (None if why.extended is None else
              selection.failure_message(job.allocation_uuid, why.extended))
    now = utcnow()
    if not reservation.fail_allocation(db, job.allocation_id,
                                   job.allocation_uuid, job.affinity,
                                   message, now, detail):
        return None
    LOG.info("Allocation %s finished: error", job.allocation_uuid)
    return Settled(ERROR, None, message, now, detail, why.step)


def db_capacity(
    db: Database,
    resource_class: str | None,
    visible: ColumnElement[bool] | None = None,
) -> list[model.CapacityRow]:
    """Capacity rows computed from the database's node facts."""
    with db.read() as session:
        facts = snapshot.node_facts(
            session, resource_class=resource_class, visible=visible
        )
    return model.capacity(facts, resource_class)


class DatabaseBackend:
    """Allocation straight from the database (no external service)."""

    name = "database"
    blocking = False  # a bounded number of statements, no pauses
    holder = None  # releases follow the server's own rules

    def __init__(self, db: Database, rng: random.Random | None = None,
                 default_order: Order = Order.FIRST_FIT) -> None:
        self._db = db
        #: The order of requests that name none (``serve --default-order``).
        self.default_order = default_order
        # Seeded from the system's randomness once: each process draws
        # its own pivots and orders, and a draw asks the kernel nothing
        # (SystemRandom's did: two system calls per create).
        self._rng = rng or random.Random()  # noqa: S311 (not a secret)
        self._rng_lock = threading.Lock()
        self._top_id = 0
        self._top_id_expires = 0.0

    def start(self) -> None:
        """Nothing runs in the background."""

    def stop(self) -> None:
        """Nothing runs in the background."""

    def allocate(self, job: Job) -> Settled | None:
        """Select and reserve a node, or record why there is none."""
        filters = list(job.filters)
        tried = 0
        # A waiting allocation is tried again on the next queue round.
        rounds = 1 if job.queue_deadline is not None else SEARCH_ROUNDS
        for round_ in range(rounds):
            found = self.window(job)
            if not found:
                if job.queue_deadline is not None:
                    return no_node(self._db, job, "")
                return fail(self._db, job, explain(self._db, job, tried))
            for candidate in self.order(job, found):
                now = utcnow()
                outcome = reservation.reserve(
                    self._db, job.allocation_id, job.allocation_uuid,
                    candidate.id, job.request, filters, job.affinity, now,
                    wait_for_lock=round_ == SEARCH_ROUNDS - 1,
                )
                if outcome is reservation.Reservation.RESERVED:
                    LOG.info("Allocation %s finished: active on node %s",
                             job.allocation_uuid, candidate.uuid)
                    return Settled(ACTIVE, candidate.uuid, None, now)
                if outcome is not reservation.Reservation.NODE_TAKEN:
                    return None  # deleted, taken over or settled
            tried = len(found)
        if job.queue_deadline is not None:
            return no_node(self._db, job, "")
        # Say why as of now: usually concurrent requests took every match.
        return fail(self._db, job, explain(self._db, job, tried))

    def window(self, job: Job) -> list[selection.CandidateRow]:
        """A window of the nodes passing every filter, at a random
        position (empty only when none does).  Its statements are their
        own transaction: the reservation checks each node again."""
        best = self.order_of(job.request) is Order.BEST_FIT
        with self._db.statement_connection() as conn:
            if best:
                return matching.best_fit_window(conn, job.request,
                                                list(job.filters))
            top = self._highest_node_id(conn)
            with self._rng_lock:
                pivot = self._rng.randint(1, max(top, 1))
            return matching.candidate_window(
                conn, job.request, list(job.filters), pivot)

    def order(self, job: Job, found: Sequence[selection.CandidateRow]
              ) -> Iterator[selection.Candidate]:
        """The order to try a window's nodes in: best fit's as the
        window came, else the named node first, the rest at random."""
        if self.order_of(job.request) is Order.BEST_FIT:
            return (selection.Candidate._make(row) for row in found)
        return selection.candidate_order(
            found, job.request.preferred_name, self._draw)

    def order_of(self, request: selection.Request) -> Order:
        """The request's order, or this server's default."""
        return request.constraints.order or self.default_order

    def named(self, job: Job, node_uuid: str
              ) -> list[selection.Candidate]:
        """The node ``node_uuid`` if it passes every filter."""
        with self._db.read() as session:
            rows = session.connection().execute(
                select(Node.id, Node.name, Node.uuid).where(
                    Node.uuid == node_uuid,
                    *matching.predicates(job.filters)),
                matching.filter_params(job.request))
            return [selection.Candidate(int(i), n, str(u))
                    for i, n, u in rows]

    def _draw(self, below: int) -> int:
        """A random index below ``below`` (the generator is shared)."""
        with self._rng_lock:
            return self._rng.randrange(below)

    def _highest_node_id(self, conn: AnyConnection) -> int:
        """The highest node id, read at most once per TOP_ID_TTL."""
        now = time.monotonic()
        if now >= self._top_id_expires:
            self._top_id = matching.highest_node_id(conn)
            self._top_id_expires = now + TOP_ID_TTL
        return self._top_id

    def capacity(
        self,
        resource_class: str | None,
        visible: ColumnElement[bool] | None = None,
    ) -> Sequence[dict[str, Any]]:
        """Capacity from the database."""
        return [
            row.as_dict()
            for row in db_capacity(self._db, resource_class, visible)
        ]
