"""Keep Placement in step with the database: providers, inventories,
traits and the allocations' claims.

The database is the source of truth for nodes.  The sync is level
triggered rather than hooked into every code path that changes a node
(API handlers, the fake-hardware state machine, enroll, other processes
sharing the database): every ``interval`` seconds it reads the node facts
(two queries), compares the provider each node should have with what it
last wrote, and pushes only the differences.  A full reconciliation reads
Placement's actual state and repairs any drift: at start, after Placement
was unreachable, and every ``reconcile_interval`` seconds.

Claims: an active allocation must hold one unit on its node's provider
(consumer = allocation UUID).  A claim whose allocation was deleted, or
whose node was undeployed or deleted, is removed; a claim missing from
Placement (Placement lost its data, or a backfilled allocation) is made
again.  A consumer whose allocation is still ``allocating`` belongs to a
worker in the middle of its claim and is left alone.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from baremetal_allocclient.server.allocation.placement import snapshot
from baremetal_allocclient.server.allocation.placement.client import (
    DUPLICATE_NAME,
    PlacementClient,
    PlacementError,
    PlacementUnavailable,
)
from baremetal_allocclient.server.allocation.placement.model import (
    MANAGED_TRAIT,
    ProviderState,
    desired_provider,
    provider_matches,
)
from baremetal_allocclient.server.db.engine import Database

LOG = logging.getLogger(__name__)

GENERATION_RETRIES = 4


class PlacementSync:
    """Pushes node changes to Placement and reconciles periodically."""

    def __init__(
        self,
        db: Database,
        client: PlacementClient,
        project_id: str,
        user_id: str,
        interval: float = 1.0,
        reconcile_interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._db = db
        self._client = client
        self._project = project_id
        self._user = user_id
        self._interval = interval
        self._reconcile_interval = reconcile_interval
        self._clock = clock
        self._pushed: dict[str, ProviderState] = {}
        self._claims: dict[str, str] = {}  # consumer -> node uuid
        self._catalogue: set[str] = set()  # CUSTOM_ names known to exist
        self._failing: dict[str, str] = {}  # node -> last error logged
        self._lock = threading.RLock()
        self._needs_full = True
        self._last_full = 0.0
        self._unreachable_logged = False
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        #: Finished full reconciliations (tests and the capacity view).
        self.reconciliations = 0
        self.last_error: str | None = None

    # -- lifecycle ------------------------------------------------------
    def start(self) -> None:
        """Run the sync loop in a daemon thread."""
        self._thread = threading.Thread(
            target=self._loop, name="placement-sync", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop the loop (a running round finishes)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def wake(self) -> None:
        """Run a round now instead of at the next interval."""
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception as exc:  # the database may be down, etc.
                LOG.warning("Placement sync round failed: %s", exc)
            self._wake.wait(self._interval)
            self._wake.clear()

    # -- rounds ---------------------------------------------------------
    def run_once(self) -> None:
        """One round: full when due, else only the differences."""
        with self._lock:
            due = (
                self._needs_full
                or self._clock() - self._last_full >= self._reconcile_interval
            )
            try:
                if due:
                    self.reconcile()
                else:
                    self._incremental()
            except PlacementUnavailable as exc:
                self._needs_full = True
                self.last_error = str(exc)
                if not self._unreachable_logged:
                    LOG.warning("Placement unreachable, will reconcile when "
                                "it is back: %s", exc)
                    self._unreachable_logged = True
                return
            if self._unreachable_logged:
                LOG.info("Placement reachable again; reconciled")
                self._unreachable_logged = False

    def record_claim(self, consumer: str, node_uuid: str) -> None:
        """The backend made this claim (no need to check it again)."""
        with self._lock:
            self._claims[consumer] = node_uuid

    def _incremental(self) -> None:
        with self._db.read() as session:
            facts = snapshot.node_facts(session)
            claims = snapshot.active_claims(session)
        desired = {f.uuid: desired_provider(f) for f in facts}
        for uuid, want in desired.items():
            if self._pushed.get(uuid) != want:
                self._push(want, self._pushed.get(uuid))
        # Claims first: a deleted node's provider can only go once empty.
        for consumer in set(self._claims) - set(claims):
            self._client.delete_consumer(consumer)
            del self._claims[consumer]
        for uuid in set(self._pushed) - set(desired):
            self._remove_provider(uuid, {})
        for consumer, (node, owner) in claims.items():
            if self._claims.get(consumer) != node:
                self._ensure_claim(consumer, node, owner, desired)

    def reconcile(self) -> None:
        """Compare Placement's actual state with the database; repair."""
        started = self._clock()
        self._catalogue.clear()  # Placement may have lost custom names
        self._ensure_custom(MANAGED_TRAIT, trait=True)
        with self._db.read() as session:
            facts = snapshot.node_facts(session)
            claims = snapshot.active_claims(session)
        desired = {f.uuid: desired_provider(f) for f in facts}
        actual = {
            p.uuid: p for p in self._client.providers([MANAGED_TRAIT])
        }
        self._pushed.clear()
        for uuid, want in desired.items():
            provider = actual.get(uuid)
            if provider is None:  # missing, or our marker trait was lost
                LOG.info("Reconcile: creating or repairing the provider "
                         "of node %s", uuid)
                self._push(want, None)
                continue
            _igen, inventories = self._client.inventories(uuid)
            _tgen, traits = self._client.traits(uuid)
            name_ok, inv_ok, traits_ok = provider_matches(
                want, provider.name, inventories, traits
            )
            if name_ok and inv_ok and traits_ok:
                self._pushed[uuid] = want
            else:
                LOG.info("Reconcile: repairing provider of node %s", uuid)
                self._push(want, None)
        # Claims on our providers that no active allocation explains.
        held: dict[str, set[str]] = {}
        for uuid in set(actual) | set(self._pushed):
            held[uuid] = self._client.provider_consumers(uuid)
        unexplained = {
            consumer
            for uuid, consumers in held.items()
            for consumer in consumers
            if claims.get(consumer, ("", None))[0] != uuid
        }
        # Read the database again: a worker may have claimed and booked a
        # node since the first read, and its claim is not stale.
        with self._db.read() as session:
            states = snapshot.allocation_states(session, sorted(unexplained))
            claims = snapshot.active_claims(session)
        for consumer in sorted(unexplained):
            if states.get(consumer) == "allocating":
                continue  # a worker is between its claim and the database
            node = claims.get(consumer, ("", None))[0]
            if consumer in held.get(node, set()):
                continue  # finished during this round: explained now
            if self._client.consumer_user(consumer) != self._user:
                # Another service's claim (Nova's instance, an operator's
                # hold): it keeps the node from being handed out.
                continue
            LOG.info("Reconcile: removing stale claim %s", consumer)
            self._client.delete_consumer(consumer)
            for consumers in held.values():
                consumers.discard(consumer)
        for uuid in set(actual) - set(desired):
            LOG.info("Reconcile: removing provider of deleted node %s", uuid)
            self._remove_provider(uuid, held)
        self._claims = {}
        for consumer, (node, owner) in claims.items():
            if consumer in held.get(node, set()):
                self._claims[consumer] = node
            else:
                self._ensure_claim(consumer, node, owner, desired)
        self._needs_full = False
        self._last_full = started
        self.reconciliations += 1
        self.last_error = None

    # -- pieces ---------------------------------------------------------
    def _ensure_custom(self, name: str, trait: bool) -> None:
        if not name.startswith("CUSTOM_") or name in self._catalogue:
            return
        if trait:
            self._client.ensure_trait(name)
        else:
            self._client.ensure_resource_class(name)
        self._catalogue.add(name)

    def _push(self, want: ProviderState, before: ProviderState | None) -> None:
        """Make one provider match ``want``; on a Placement error the node
        is left out of ``_pushed`` so the next round tries again."""
        self._pushed.pop(want.uuid, None)
        try:
            if want.resource_class:
                self._ensure_custom(want.resource_class, trait=False)
            for trait in want.traits:
                self._ensure_custom(trait, trait=True)
            provider = self._client.provider(want.uuid)
            if provider is None:
                self._client.create_provider(want.uuid, want.name)
                before = None  # everything must be written
            elif provider.name != want.name:
                self._client.rename_provider(want.uuid, want.name)
            if before is None or before.inventories() != want.inventories():
                self._set_inventory(want)
            if before is None or before.traits != want.traits:
                self._set_traits(want)
        except PlacementError as exc:
            level = logging.ERROR
            if exc.code == DUPLICATE_NAME:
                level = logging.WARNING  # a stale provider; reconcile fixes
            if self._failing.get(want.uuid) == str(exc):
                level = logging.DEBUG  # said already; retried every round
            self._failing[want.uuid] = str(exc)
            LOG.log(level, "Could not update the provider of node %s: %s",
                    want.uuid, exc)
            self.last_error = str(exc)
            return
        self._failing.pop(want.uuid, None)
        self._pushed[want.uuid] = want

    def _set_inventory(self, want: ProviderState) -> None:
        for attempt in range(GENERATION_RETRIES):
            generation, current = self._client.inventories(want.uuid)
            _n, ok, _t = provider_matches(
                want, want.name, current, want.traits
            )
            if ok:
                return
            try:
                self._client.set_inventories(
                    want.uuid, generation, want.inventories()
                )
                return
            except PlacementError as exc:
                if not exc.concurrent_update or (
                    attempt == GENERATION_RETRIES - 1
                ):
                    raise

    def _set_traits(self, want: ProviderState) -> None:
        for attempt in range(GENERATION_RETRIES):
            generation, current = self._client.traits(want.uuid)
            if current == set(want.traits):
                return
            try:
                self._client.set_traits(want.uuid, generation,
                                        sorted(want.traits))
                return
            except PlacementError as exc:
                if not exc.concurrent_update or (
                    attempt == GENERATION_RETRIES - 1
                ):
                    raise

    def _remove_provider(
        self, uuid: str, held: Mapping[str, set[str]]
    ) -> None:
        try:
            consumers = held.get(uuid)
            if consumers is None:
                consumers = self._client.provider_consumers(uuid)
            for consumer in consumers:
                self._client.delete_consumer(consumer)
                self._claims.pop(consumer, None)
            self._client.delete_provider(uuid)
        except PlacementError as exc:
            LOG.error("Could not delete the provider of node %s: %s",
                      uuid, exc)
            self.last_error = str(exc)
            return
        self._pushed.pop(uuid, None)

    def _ensure_claim(
        self, consumer: str, node: str, owner: str | None,
        desired: Mapping[str, ProviderState],
    ) -> None:
        want = desired.get(node)
        if want is None or want.resource_class is None:
            return
        try:
            self._client.claim(consumer, node, want.resource_class,
                               owner or self._project, self._user)
            LOG.info("Claimed node %s in Placement for allocation %s",
                     node, consumer)
        except PlacementError as exc:
            if not exc.concurrent_update:  # concurrent: it exists already
                LOG.error("Could not claim node %s for allocation %s in "
                          "Placement: %s", node, consumer, exc)
                self.last_error = str(exc)
                return
        self._claims[consumer] = node
