"""Keep the mirror in step with Ironic.

A full round reads every node of Ironic (one paged list) and every
allocation this server made there, writes the differences into the
mirror (:mod:`.mirror`) and removes claims left behind in Ironic (an
allocation of this server deleted or failed while Ironic was away).  It
runs every ``interval`` seconds: the bound on how stale the mirror may
be for changes made directly in Ironic.  Changes made through the
server are read back at once (:meth:`IronicSync.refresh`), and a
selection that finds nothing reads its resource class again before it
gives up, so a node enrolled a moment ago is found.

Staleness never gives a node twice: the reservation itself is Ironic's
(an allocation naming one candidate), and a stale mirror costs at most a
claim Ironic refuses.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sqlalchemy import select

from baremetal_allocclient.server.allocation.states import ACTIVE, ALLOCATING
from baremetal_allocclient.server.broker import mirror
from baremetal_allocclient.server.broker.ironic_client import (
    IronicClient,
    IronicError,
    IronicUnavailable,
)
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Allocation, utcnow

LOG = logging.getLogger(__name__)

#: The key marking, in an Ironic allocation's ``extra``, the allocations
#: this server made (its value: the server's conductor name).
MARKER = "baremetal_alloc:broker"


class IronicSync:
    """The mirror's background rounds and on-demand refreshes."""

    def __init__(self, db: Database, client: IronicClient,
                 interval: float = 10.0,
                 on_released: Callable[[list[str]], None] | None = None
                 ) -> None:
        self._db = db
        self._client = client
        self.interval = interval
        #: Told the allocations a read released (the waiting line wakes).
        self.on_released = on_released
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._unreachable_logged = False
        #: Finished full rounds (tests wait on it).
        self.rounds = 0

    # -- lifecycle ------------------------------------------------------
    def start(self) -> None:
        """Run full rounds in the background, the first one now."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="ironic-sync")
        self._thread.start()

    def stop(self) -> None:
        """End the rounds."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
                if self._unreachable_logged:
                    LOG.warning("Ironic is reachable again")
                self._unreachable_logged = False
            except IronicUnavailable as exc:
                if not self._unreachable_logged:
                    LOG.warning("Mirror not updated: %s", exc)
                    self._unreachable_logged = True
            except Exception:
                LOG.exception("Mirror round failed")
            self._stop.wait(self.interval)

    # -- rounds ---------------------------------------------------------
    def run_once(self) -> mirror.Applied:
        """One full round: every node, then the claims left behind."""
        started = utcnow()
        nodes = [mirror.facts(node) for node in self._client.nodes()]
        applied = self._write(nodes, started, complete=True)
        self._remove_left_claims()
        self.rounds += 1
        return applied

    def refresh(self, resource_class: str | None = None,
                idents: Iterable[str] = ()) -> mirror.Applied:
        """Read some nodes again now: a resource class's, or the named
        ones (UUIDs or names; one Ironic no longer has leaves the
        mirror)."""
        started = utcnow()
        found: list[Mapping[str, Any]] = []
        missing: list[str] = []
        if resource_class is not None:
            found.extend(self._client.nodes(resource_class=resource_class))
        for ident in idents:
            node = self._client.node(ident)
            if node is None:
                missing.append(ident)
            else:
                found.append(node)
        return self._write([mirror.facts(n) for n in found], started,
                           missing=missing)

    def apply_documents(self, nodes: Iterable[Mapping[str, Any]]
                        ) -> mirror.Applied:
        """Write node documents Ironic has just given (a client's read
        through the server)."""
        started = utcnow()
        return self._write([mirror.facts(n) for n in nodes], started)

    def _write(self, batch: list[mirror.NodeFacts], started: Any,
               complete: bool = False, missing: Iterable[str] = ()
               ) -> mirror.Applied:
        with self._db.write() as session:
            applied = mirror.apply(session, batch, started, complete)
            if missing:
                applied.deleted += mirror.remove(session, missing, started,
                                                 applied)
        self._release_confirmed(applied)
        if applied.released and self.on_released is not None:
            self.on_released(applied.released)
        return applied

    def _release_confirmed(self, applied: mirror.Applied) -> None:
        """Release the allocations Ironic no longer holds their node for,
        once Ironic says so again now."""
        for allocation_uuid, node_uuid in applied.suspects:
            claim = self._client.allocation(allocation_uuid)
            if claim is not None and claim.get("node_uuid") == node_uuid:
                continue
            with self._db.write() as session:
                if mirror.release_if_still_held(session, allocation_uuid,
                                                node_uuid):
                    assert applied.released is not None
                    applied.released.append(allocation_uuid)

    def _remove_left_claims(self) -> None:
        """Delete Ironic allocations this server made whose own
        allocation is gone or failed (never one still being settled)."""
        ours = [a for a in self._client.allocations()
                if isinstance(a.get("extra"), dict) and MARKER in a["extra"]]
        if not ours:
            return
        with self._db.read() as session:
            rows = session.execute(select(
                Allocation.uuid, Allocation.state).where(
                    Allocation.uuid.in_([a["uuid"] for a in ours])))
            states = {str(uuid): str(state) for uuid, state in rows}
        for claim in ours:
            state = states.get(claim["uuid"])
            if state in (ALLOCATING, ACTIVE):
                continue
            try:
                self._client.delete_allocation(claim["uuid"])
                LOG.info("Removed claim %s left in Ironic", claim["uuid"])
            except IronicError as exc:
                LOG.warning("Could not remove claim %s left in Ironic: %s",
                            claim["uuid"], exc)
