"""The Placement backend: claim nodes through OpenStack Placement.

Selection asks Placement for allocation candidates (one unit of the
node's normalised resource class, the requested traits as
``required=``), narrowed by the database's own filters (resource class,
availability, candidate nodes, owner/lessee, traits).  With
``candidate_nodes``, each candidate is queried on its own with
``in_tree=<node uuid>`` in random order, stopping at the first claim (one
query per candidate tried, usually one).  The claim is
``PUT /allocations/{allocation uuid}`` with ``consumer_generation: null``;
a 409 with ``placement.concurrent_update`` (a generation moved) retries
the same node, any other 409 (capacity gone: another service claimed the
node) moves on.  After the claim the database bookkeeping is the same
compare-and-set as the database backend; if it fails the claim is
deleted, so nothing is left half-claimed.

Placement unreachable: the worker waits up to ``wait`` seconds for it,
then the allocation goes to ``error`` with a clear ``last_error``.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, select

from baremetal_allocclient.server.allocation import (
    matching,
    reservation,
    selection,
)
from baremetal_allocclient.server.allocation.backends import database, remote
from baremetal_allocclient.server.allocation.backends.base import Job, Settled
from baremetal_allocclient.server.allocation.placement import model
from baremetal_allocclient.server.allocation.placement.client import (
    PlacementClient,
    PlacementError,
    PlacementUnavailable,
)
from baremetal_allocclient.server.allocation.placement.sync import (
    PlacementSync,
)
from baremetal_allocclient.server.allocation.states import ACTIVE
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Node, utcnow

LOG = logging.getLogger(__name__)

SEARCH_ROUNDS = 5
CLAIM_RETRIES = 3

#: What one claim attempt came to: the settled allocation, or why not.
_Outcome = Settled | reservation.Reservation


def _finished(outcome: _Outcome) -> Settled | None:
    """The result of ``allocate`` once an attempt stopped the search."""
    return outcome if isinstance(outcome, Settled) else None


class PlacementBackend:
    """Allocation through Placement, bookkeeping in the database."""

    name = "placement"
    blocking = True  # HTTP to Placement, and waits while it is down
    holder = None  # releases follow the server's own rules

    def __init__(
        self,
        db: Database,
        client: PlacementClient,
        sync: PlacementSync,
        project_id: str,
        user_id: str,
        wait: float = 30.0,
        rng: random.Random | None = None,
    ) -> None:
        self._db = db
        self.client = client
        self.sync = sync
        self._project = project_id
        self._user = user_id
        self._wait = wait
        self._rng = rng or random.SystemRandom()
        self._rng_lock = threading.Lock()

    def start(self) -> None:
        """Start the sync (its first round is a full reconciliation)."""
        self.sync.start()

    def stop(self) -> None:
        """Stop the sync."""
        self.sync.stop()

    # -- allocation -----------------------------------------------------
    def allocate(self, job: Job) -> Settled | None:
        """Claim in Placement, then in the database; or record why not."""
        try:
            return remote.patiently(lambda: self._allocate(job),
                                    PlacementUnavailable, self._wait)
        except remote.StillUnreachable as exc:
            return self._fail_and_unclaim(
                job, f"Placement is unreachable (waited {exc.waited:g} s): "
                     f"{exc.cause}")
        except PlacementError as exc:
            return self._fail_and_unclaim(job, f"Placement refused: {exc}")

    def _fail_and_unclaim(self, job: Job, reason: str) -> Settled | None:
        """Record the failure, then remove any claim made for it; both
        only while the allocation is still this worker's (after a
        take-over the claim under its UUID is the new owner's)."""
        settled = database.fail(self._db, job, reason, step="placement")
        if settled is not None:
            self._release_quietly(job.allocation_uuid)
        return settled

    def _allocate(self, job: Job) -> Settled | None:
        request = job.request
        rc = model.normalize_resource_class(request.resource_class)
        if not self._owned(job):
            return None  # taken over while this process was away
        # An earlier attempt (before a restart or take-over) may have
        # claimed already: finish that claim first.
        for held in self.client.consumer_allocations(job.allocation_uuid):
            found = self._eligible(job, [held]).get(held)
            outcome: _Outcome = (
                self._reserve(job, found)
                if found is not None else reservation.Reservation.NODE_TAKEN
            )
            if outcome is not reservation.Reservation.NODE_TAKEN:
                return _finished(outcome)
            if not self._unclaim(job):
                return None
        tried = 0
        synced = False
        for _round in range(SEARCH_ROUNDS):
            order = self._ordered_candidates(job, rc, final=synced)
            if order is None:
                return None  # failed with a reason
            if not order:
                # The database has matching nodes Placement does not offer
                # (yet): push pending node changes now, then ask again.
                self.sync.run_once()
                synced = True
                continue
            offered = 0
            for candidate in order:
                if request.candidate_nodes and candidate.uuid not in (
                    self.client.allocation_candidates(
                        rc, request.traits, in_tree=candidate.uuid
                    )
                ):
                    continue
                offered += 1
                outcome = self._claim(job, rc, candidate)
                if outcome is not reservation.Reservation.NODE_TAKEN:
                    return _finished(outcome)
            tried = len(order)
            if not offered:
                if synced:
                    return database.fail(self._db, job, (
                        f"Placement offers none of the {tried} matching "
                        f"requested nodes for {rc}"
                    ), step="placement")
                self.sync.run_once()
                synced = True
        return database.fail(
            self._db, job, selection.reservation_failure(tried),
            step="taken")

    def _ordered_candidates(
        self, job: Job, rc: str, final: bool
    ) -> list[selection.Candidate] | None:
        """Nodes to try, in order; None after failing the job; empty when
        Placement lags behind the database and ``final`` is False."""
        request = job.request
        if request.candidate_nodes:
            pool = list(request.candidate_nodes)  # in_tree per node later
        else:
            pool = self.client.allocation_candidates(rc, request.traits)
        eligible = self._eligible(job, pool)
        if not eligible:
            reason: str | selection.Why = database.explain(
                self._db, job, 0)
            if not request.candidate_nodes:
                with self._db.read() as session:
                    matched = matching.candidates(
                        session, request, list(job.filters)
                    )
                if matched and not final:
                    return []
                if matched:
                    reason = (
                        f"Placement offers none of the {len(matched)} "
                        f"matching nodes for {rc}"
                    )
            database.fail(self._db, job, reason, step="placement")
            return None
        with self._rng_lock:
            return selection.order_candidates(
                list(eligible.values()), request.preferred_name, self._rng
            )

    def _eligible(
        self, job: Job, uuids: Sequence[str]
    ) -> dict[str, selection.Candidate]:
        """The given nodes passing every database filter, by uuid."""
        if not uuids:
            return {}
        with self._db.read() as session:
            rows = session.connection().execute(
                select(Node.id, Node.uuid, Node.name).where(
                    Node.uuid.in_(list(uuids)),
                    *matching.predicates(job.filters),
                ),
                matching.filter_params(job.request),
            )
            return {str(u): selection.Candidate(int(i), n, str(u))
                    for i, u, n in rows}

    def _claim(
        self, job: Job, rc: str, candidate: selection.Candidate
    ) -> _Outcome:
        node_uuid = candidate.uuid
        project = job.request.owner or self._project
        for attempt in range(CLAIM_RETRIES):
            try:
                self.client.claim(job.allocation_uuid, node_uuid, rc,
                                  project, self._user)
                break
            except PlacementError as exc:
                if exc.status != 409:
                    raise
                if not exc.concurrent_update:
                    LOG.debug("Node %s taken in Placement: %s", node_uuid,
                              exc.detail)
                    return reservation.Reservation.NODE_TAKEN
                held = self.client.consumer_allocations(job.allocation_uuid)
                if held:  # our own earlier claim (e.g. a lost response)
                    if node_uuid in held:
                        break
                    if not self._unclaim(job):
                        return reservation.Reservation.NOT_OURS
                if attempt == CLAIM_RETRIES - 1:
                    return reservation.Reservation.NODE_TAKEN
        return self._reserve(job, candidate)

    def _reserve(self, job: Job, candidate: selection.Candidate) -> _Outcome:
        """The database half; undoes the Placement claim unless it won."""
        now = utcnow()
        try:
            outcome = reservation.reserve(
                self._db, job.allocation_id, job.allocation_uuid,
                candidate.id, job.request, list(job.filters), job.affinity,
                now,
            )
        except Exception:
            if self._owned(job):
                self._release_quietly(job.allocation_uuid)
            raise
        if outcome is reservation.Reservation.NOT_OURS:
            # Taken over (or settled) meanwhile: the claim under this
            # UUID may now be the new owner's; leave it.
            return outcome
        if outcome is not reservation.Reservation.RESERVED:
            if outcome is reservation.Reservation.ALLOCATION_DELETED:
                self.client.delete_consumer(job.allocation_uuid)
            elif not self._unclaim(job):
                return reservation.Reservation.NOT_OURS
            return outcome
        self.sync.record_claim(job.allocation_uuid, candidate.uuid)
        LOG.info("Allocation %s finished: active on node %s (claimed "
                 "in Placement)", job.allocation_uuid, candidate.uuid)
        return Settled(ACTIVE, candidate.uuid, None, now)

    def _owned(self, job: Job) -> bool:
        """Still this worker's to settle (not taken over meanwhile)."""
        return reservation.still_owned(self._db, job.allocation_id,
                                   job.allocation_uuid, job.affinity)

    def _unclaim(self, job: Job) -> bool:
        """Delete the Placement claim filed under the allocation's UUID,
        only while the allocation is still this worker's: after a
        take-over that claim is the new owner's.  False when it was not
        ours to delete."""
        if not self._owned(job):
            return False
        self.client.delete_consumer(job.allocation_uuid)
        return True

    def _release_quietly(self, consumer: str) -> None:
        """Best effort; the reconciliation removes what this misses."""
        try:
            self.client.delete_consumer(consumer)
        except (PlacementError, PlacementUnavailable) as exc:
            LOG.warning("Could not remove claim %s yet: %s", consumer, exc)

    # -- capacity -------------------------------------------------------
    def capacity(
        self,
        resource_class: str | None,
        visible: ColumnElement[bool] | None = None,
    ) -> Sequence[dict[str, Any]]:
        """The database view plus what Placement reports per class."""
        rows = database.db_capacity(self._db, resource_class, visible)
        result = []
        for row in rows:
            entry = row.as_dict()
            entry["placement"] = self._placement_view(
                row.resource_class, visible
            )
            result.append(entry)
        return result

    def _placement_view(
        self, resource_class: str, visible: ColumnElement[bool] | None
    ) -> dict[str, Any]:
        rc = model.normalize_resource_class(resource_class)
        query = select(Node.uuid).where(Node.resource_class == resource_class)
        if visible is not None:
            query = query.where(visible)
        with self._db.read() as session:
            uuids = [str(u) for u in session.scalars(query)]
        total = reserved = used = 0
        try:
            for uuid in uuids:
                try:
                    _gen, inventories = self.client.inventories(uuid)
                except PlacementError as exc:
                    if exc.status == 404:
                        continue
                    raise
                inventory = inventories.get(rc)
                if inventory is None:
                    continue
                total += int(inventory["total"])
                reserved += int(inventory["reserved"])
                used += self.client.usages(uuid).get(rc, 0)
        except (PlacementError, PlacementUnavailable) as exc:
            return {"resource_class": rc, "error": str(exc)}
        return {
            "resource_class": rc,
            "total": total,
            "reserved": reserved,
            "used": used,
            "free": max(total - reserved - used, 0),
        }
