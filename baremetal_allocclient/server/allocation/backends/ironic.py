"""The Ironic backend (the broker): Ironic decides every reservation.

Selection is the database backend's, over the mirror of Ironic's nodes
(:mod:`~baremetal_allocclient.server.broker.mirror`): every filter,
constraint and the funnel.  Each chosen node is then claimed in Ironic
with an allocation of the same UUID naming that one node as its only
candidate, so Ironic's own lock decides: a node reserved meanwhile by
anyone talking to Ironic directly fails that claim, the failed Ironic
allocation is deleted, the node is read again into the mirror, and the
next candidate is tried.  Only an ``active`` Ironic allocation is
recorded in the database (the reservation's compare-and-set); if that
fails, the claim in Ironic is deleted, so nothing is held twice or left
half-claimed.  A selection that finds nothing reads the resource class
from Ironic again before it fails.

Ironic unreachable: the worker waits up to ``wait`` seconds, then the
allocation goes to ``error`` saying so.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement

from baremetal_allocclient.constraints import Order
from baremetal_allocclient.server.allocation import reservation, selection
from baremetal_allocclient.server.allocation.backends import database, remote
from baremetal_allocclient.server.allocation.backends.base import Job, Settled
from baremetal_allocclient.server.allocation.states import ACTIVE, ALLOCATING
from baremetal_allocclient.server.broker.ironic_client import (
    IronicClient,
    IronicError,
    IronicUnavailable,
)
from baremetal_allocclient.server.broker.sync import MARKER, IronicSync
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import utcnow
from baremetal_allocclient.server.domain.errors import Busy, Conflict, Invalid

LOG = logging.getLogger(__name__)

SEARCH_ROUNDS = 5
#: Seconds between reads of a claim Ironic is still settling.
SETTLE_POLL = (0.02, 0.05, 0.1, 0.2)
#: Seconds a resource class read from Ironic on a miss stays fresh.
CLASS_REFRESH = 1.0

_Outcome = Settled | reservation.Reservation | None


class IronicBackend:
    """Allocation through a real Ironic, selection over its mirror."""

    name = "ironic"
    blocking = True  # HTTP to Ironic, and waits while it is down

    def __init__(self, db: Database, client: IronicClient, sync: IronicSync,
                 conductor: str, wait: float = 30.0,
                 default_order: Order = Order.FIRST_FIT) -> None:
        self._db = db
        self.client = client
        self.sync = sync
        self._conductor = conductor
        self._wait = wait
        self._search = database.DatabaseBackend(
            db, default_order=default_order)
        self._lock = threading.Lock()
        self._class_read: dict[str, float] = {}

    def start(self) -> None:
        """Start the mirror's rounds (the first reads every node)."""
        self.sync.start()

    def stop(self) -> None:
        """Stop the mirror's rounds."""
        self.sync.stop()

    # -- allocation -----------------------------------------------------
    def allocate(self, job: Job) -> Settled | None:
        """Claim in Ironic, then in the database; or record why not."""
        try:
            return remote.patiently(lambda: self._allocate(job),
                                    IronicUnavailable, self._wait)
        except remote.StillUnreachable as exc:
            return database.fail(self._db, job, (
                f"Ironic is unreachable (waited {exc.waited:g} s): "
                f"{exc.cause}"), step="ironic")
        except IronicError as exc:
            self._unclaim_quietly(job)
            return database.fail(self._db, job,
                                 f"Ironic refused: {exc.message}",
                                 step="ironic")

    def _allocate(self, job: Job) -> Settled | None:
        if not self._owned(job):
            return None  # taken over while this process was away
        # A claim an earlier attempt made (before a restart or take-over)
        # under this UUID makes Ironic refuse the next one (409), which
        # settles it then: no request is spent asking first.
        tried = 0
        refreshed = False
        for _round in range(SEARCH_ROUNDS):
            found = self._search.window(job)
            if not found and not refreshed:
                self._refresh_request(job)
                refreshed = True
                found = self._search.window(job)
            if not found:
                # Before failing: the node of a claim made before a
                # restart shows as taken (by this very allocation).
                outcome = self._finish_earlier_claim(job)
                if outcome is not reservation.Reservation.NODE_TAKEN:
                    return outcome if isinstance(outcome, Settled) else None
                break
            for candidate in self._search.order(job, found):
                outcome = self._claim(job, candidate)
                if outcome is not reservation.Reservation.NODE_TAKEN:
                    return outcome if isinstance(outcome, Settled) else None
            tried = len(found)
        if job.queue_deadline is not None:
            return database.no_node(self._db, job, "")
        return database.fail(self._db, job,
                             database.explain(self._db, job, tried))

    def _refresh_request(self, job: Job) -> None:
        """Read the nodes the request could use from Ironic again; a
        resource class at most once per :data:`CLASS_REFRESH` seconds
        (when the class is used up, every request finds nothing)."""
        request = job.request
        if request.candidate_nodes:
            self.sync.refresh(idents=request.candidate_nodes)
            return
        now = time.monotonic()
        with self._lock:
            last = self._class_read.get(request.resource_class)
            if last is not None and now - last < CLASS_REFRESH:
                return
            self._class_read[request.resource_class] = now
            if len(self._class_read) > 10_000:  # bounded
                self._class_read.clear()
        self.sync.refresh(resource_class=request.resource_class)

    def _finish_earlier_claim(self, job: Job) -> _Outcome:
        """An earlier attempt (before a restart or take-over) may have
        claimed in Ironic already: keep that node, or remove the claim."""
        held = self.client.allocation(job.allocation_uuid)
        if held is None:
            return reservation.Reservation.NODE_TAKEN
        settled = self._settled(job.allocation_uuid, held)
        node_uuid = settled.get("node_uuid") if settled else None
        if settled and settled["state"] == ACTIVE and node_uuid:
            self.sync.refresh(idents=[node_uuid])
            for candidate in self._search.named(job, node_uuid):
                return self._reserve(job, candidate)
        if not self._unclaim(job):
            return reservation.Reservation.NOT_OURS
        return reservation.Reservation.NODE_TAKEN

    def _claim(self, job: Job, candidate: selection.Candidate) -> _Outcome:
        """Ask Ironic for this one node; then the database half."""
        request = job.request
        body = self._claim_body(job.allocation_uuid, candidate.uuid,
                                request.resource_class, request.traits,
                                request.owner)
        try:
            created = self.client.create_allocation(body)
        except IronicError as exc:
            if exc.status != 409:
                raise
            # A claim under this UUID exists (a lost answer): settle it.
            return self._finish_earlier_claim(job)
        settled = self._settled(job.allocation_uuid, created)
        if settled is None:
            return reservation.Reservation.NOT_OURS
        if settled["state"] != ACTIVE:
            LOG.debug("Node %s taken in Ironic: %s", candidate.uuid,
                      settled.get("last_error"))
            if not self._unclaim(job):
                return reservation.Reservation.NOT_OURS
            self.sync.refresh(idents=[candidate.uuid])
            return reservation.Reservation.NODE_TAKEN
        return self._reserve(job, candidate)

    def _claim_body(self, allocation_uuid: str, node_uuid: str,
                    resource_class: str, traits: Sequence[str],
                    owner: str | None) -> dict[str, Any]:
        """An Ironic allocation naming one node, under the server's
        allocation's UUID, marked as this server's."""
        body: dict[str, Any] = {
            "uuid": allocation_uuid, "resource_class": resource_class,
            "traits": list(traits), "candidate_nodes": [node_uuid],
            "extra": {MARKER: self._conductor}}
        if owner is not None:
            body["owner"] = owner
        return body

    def _settled(self, allocation_uuid: str, claim: dict[str, Any]
                 ) -> dict[str, Any] | None:
        """The claim once Ironic's conductor settled it (None: deleted
        meanwhile, by a release or a take-over)."""
        polls = iter(SETTLE_POLL)
        deadline = time.monotonic() + self._wait
        while claim["state"] == ALLOCATING:
            if time.monotonic() >= deadline:
                raise IronicUnavailable(
                    f"Ironic left allocation {allocation_uuid} "
                    f"allocating for {self._wait:g} s")
            time.sleep(next(polls, SETTLE_POLL[-1]))
            found = self.client.allocation(allocation_uuid)
            if found is None:
                return None
            claim = found
        return claim

    def _reserve(self, job: Job, candidate: selection.Candidate) -> _Outcome:
        """The database half; undoes the Ironic claim unless it won."""
        now = utcnow()
        try:
            outcome = reservation.reserve(
                self._db, job.allocation_id, job.allocation_uuid,
                candidate.id, job.request, list(job.filters), job.affinity,
                now, wait_for_lock=True)
        except Exception:
            self._unclaim_quietly(job)
            raise
        if outcome is reservation.Reservation.RESERVED:
            LOG.info("Allocation %s finished: active on node %s (claimed "
                     "in Ironic)", job.allocation_uuid, candidate.uuid)
            return Settled(ACTIVE, candidate.uuid, None, now)
        if outcome is reservation.Reservation.NOT_OURS:
            return outcome  # the new owner may hold the claim now
        if outcome is reservation.Reservation.ALLOCATION_DELETED:
            self.client.delete_allocation(job.allocation_uuid)
            return outcome
        # The mirror disagrees with Ironic about the node: read it again.
        if not self._unclaim(job):
            return reservation.Reservation.NOT_OURS
        self.sync.refresh(idents=[candidate.uuid])
        return outcome

    def _owned(self, job: Job) -> bool:
        return reservation.still_owned(self._db, job.allocation_id,
                                       job.allocation_uuid, job.affinity)

    def _unclaim(self, job: Job) -> bool:
        """Delete the claim under the allocation's UUID while the
        allocation is still this worker's; False when it was not."""
        if not self._owned(job):
            return False
        self.client.delete_allocation(job.allocation_uuid)
        return True

    def _unclaim_quietly(self, job: Job) -> None:
        """Best effort; the mirror's rounds remove what this misses."""
        try:
            self._unclaim(job)
        except (IronicError, IronicUnavailable) as exc:
            LOG.warning("Could not remove claim %s yet: %s",
                        job.allocation_uuid, exc)

    # -- release --------------------------------------------------------
    @property
    def holder(self) -> IronicBackend:
        """Ironic decides releases (:meth:`release`)."""
        return self

    def release(self, allocation_uuid: str, holds_node: bool) -> None:
        """Delete the allocation's claim in Ironic before the server
        deletes its own row: Ironic's rules decide whether the node may
        be freed (its 409 is the client's), and a claim Ironic no longer
        has is fine.  Without a node, failures are left to the mirror's
        rounds."""
        try:
            self.client.delete_allocation(allocation_uuid)
        except IronicUnavailable as exc:
            if holds_node:
                raise Busy("Ironic is unreachable, so the node cannot be "
                           "released now; retry later.") from exc
        except IronicError as exc:
            if holds_node:
                raise Conflict(exc.message) from exc

    def refresh_node(self, ident: str) -> None:
        """Read one node from Ironic into the mirror now."""
        try:
            self.sync.refresh(idents=[ident])
        except IronicUnavailable as exc:
            raise Busy("Ironic is unreachable; retry later.") from exc

    def backfill(self, allocation_uuid: str, node_uuid: str,
                 resource_class: str | None, traits: list[str],
                 owner: str | None) -> None:
        """Ironic's backfill of a deployed node (settled at once), under
        the allocation's UUID; its refusal, in its words, is the
        client's."""
        body: dict[str, Any] = {
            "uuid": allocation_uuid, "node": node_uuid,
            "resource_class": resource_class, "traits": traits,
            "extra": {MARKER: self._conductor}}
        if owner is not None:
            body["owner"] = owner
        try:
            self.client.create_allocation(body)
        except IronicUnavailable as exc:
            raise Busy("Ironic is unreachable; retry later.") from exc
        except IronicError as exc:
            raise (Invalid if exc.status == 400 else Conflict)(
                exc.message) from exc

    def claim_all(self, claims: Sequence[tuple[str, str]],
                  resource_class: str, traits: Sequence[str],
                  owner: str | None) -> bool:
        """Claim every (allocation, node) of a group in Ironic, all or
        none (the group's nodes are locked in the server meanwhile)."""
        made: list[str] = []
        try:
            for allocation_uuid, node_uuid in claims:
                made.append(allocation_uuid)
                if not self._claim_one(allocation_uuid, node_uuid,
                                       resource_class, traits, owner):
                    self.unclaim_all(made)
                    self.sync.refresh(idents=[node_uuid])
                    return False
        except IronicUnavailable as exc:
            self.unclaim_all(made)
            raise Busy("Ironic is unreachable; retry later.") from exc
        except IronicError as exc:
            self.unclaim_all(made)
            raise Conflict(f"Ironic refused: {exc.message}") from exc
        return True

    def _claim_one(self, allocation_uuid: str, node_uuid: str,
                   resource_class: str, traits: Sequence[str],
                   owner: str | None) -> bool:
        """One member's claim; whether Ironic gave the node."""
        settled = self._settled(allocation_uuid, self.client.create_allocation(
            self._claim_body(allocation_uuid, node_uuid, resource_class,
                             traits, owner)))
        return settled is not None and settled["state"] == ACTIVE

    def unclaim_all(self, allocation_uuids: Sequence[str]) -> None:
        """Best effort; the mirror's rounds remove what this misses."""
        for allocation_uuid in allocation_uuids:
            try:
                self.client.delete_allocation(allocation_uuid)
            except (IronicError, IronicUnavailable) as exc:
                LOG.warning("Could not remove claim %s yet: %s",
                            allocation_uuid, exc)

    # -- capacity -------------------------------------------------------
    def capacity(
        self,
        resource_class: str | None,
        visible: ColumnElement[bool] | None = None,
    ) -> Sequence[dict[str, Any]]:
        """Capacity of the mirror (as stale as the mirror may be)."""
        return [row.as_dict() for row in database.db_capacity(
            self._db, resource_class, visible)]
