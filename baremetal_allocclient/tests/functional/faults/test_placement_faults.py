"""The Placement backend under take-over: claims equal active allocations.

A real OpenStack Placement (``..placement._service``, installed once into
its own virtualenv) and two reference servers with ``--backend
placement`` on the class's database.  The full reconciliation is pushed
out of the scenario's reach (``--placement-reconcile-interval 600``), so
a claim lost or leaked by a fault stays visible to the check.
"""

from __future__ import annotations

import signal
import time
from typing import Any

import requests

from baremetal_allocclient.tests.functional.faults import (
    _harness,
    _invariants,
)
from baremetal_allocclient.tests.functional.multiprocess import _cluster
from baremetal_allocclient.tests.functional.placement import _service

FAST = _cluster.FAST
HEARTBEAT_TIMEOUT = 3.0
#: Claims follow the database within a few sync rounds (0.3 s each).
CLAIMS_SETTLE = 5.0


class _PlacementBackend:
    scenario: _harness.Scenario
    start_server: Any
    enroll: Any
    rc: Any
    assert_no_violations: Any

    def _backend(self) -> tuple[str, ...]:
        self.placement = _service.placement()
        return ("--backend", "placement", "--placement-url",
                self.placement.endpoint, "--placement-sync-interval", "0.3",
                "--placement-reconcile-interval", "600",
                "--placement-wait", "5")

    def _get(self, path: str) -> Any:
        resp = requests.get(self.placement.endpoint + path,
                            headers=_service.HEADERS, timeout=10)
        if resp.status_code == 404:
            return None
        resp.raise_for_status()
        return resp.json()

    def _claims(self, _snap: _invariants.Snapshot) -> list[str]:
        """Claims against active allocations, given a few sync rounds
        to catch up (bounded)."""
        deadline = time.monotonic() + CLAIMS_SETTLE
        while True:
            snap = self.scenario.snapshot()
            nodes = [n.uuid for n in snap.nodes.values()]
            found = _invariants.claim_violations(
                snap, _invariants.placement_claims(self._get, nodes))
            if not found or time.monotonic() > deadline:
                return found
            time.sleep(0.3)


class _PlacementTakeover(_PlacementBackend):
    def test_stalled_former_owner_keeps_off_the_new_claim(self) -> None:
        """Issue 13 item 4: the owner of an allocating allocation is
        frozen (SIGSTOP), declared dead, its allocation taken over and
        claimed by a survivor; woken (SIGCONT), the former owner must not
        delete the survivor's claim."""
        s = self.scenario
        backend = self._backend()
        self.enroll({f"{s.prefix}-n{i}": {"resource_class": self.rc()}
                     for i in range(10)})
        survivor = self.start_server(*FAST, *backend)
        victim = self.start_server(*FAST, *backend, "--allocation-delay",
                                   "2")
        # Past the victim's first (full) sync round, which would repair
        # everything once; later rounds only look at differences.
        time.sleep(1.5)
        made = []
        for _ in range(_harness.rounds(4, 8)):
            resp = s.request(victim, "POST", "/v1/allocations",
                             {"resource_class": self.rc()})
            assert resp is not None and resp.status_code == 201, resp
            made.append(resp.json()["uuid"])
        s.signal(victim, signal.SIGSTOP)
        snap = s.wait_settled(timeout=HEARTBEAT_TIMEOUT + 30)
        s.note("taken over: " + ", ".join(
            f"{a.uuid} {a.state} {a.last_error or ''}"
            for a in snap.allocations.values()))
        s.signal(victim, signal.SIGCONT)
        time.sleep(3)  # the woken workers run at once; give them time
        s.settle_and_check(timeout=30, claims=self._claims)
        for line in victim.log().splitlines():
            if any(u in line for u in made) or "laim" in line:
                s.note(f"victim log: {line[:200]}")
        del survivor
        self.assert_no_violations()


class _PlacementStorm(_PlacementBackend):
    """On SQLite only in CI: claims do not depend on the database kind,
    and each Placement-backed process is slow to start."""

    def test_create_delete_storm_keeps_claims_equal(self) -> None:
        """Creates and deletes overlap on two Placement-backed processes;
        afterwards the claims are exactly the active allocations."""
        s = self.scenario
        backend = self._backend()
        self.enroll({f"{s.prefix}-n{i}": {"resource_class": self.rc()}
                     for i in range(5)})
        servers = [self.start_server(*FAST, *backend,
                                     "--allocation-delay", "0.3")
                   for _ in range(2)]
        made: list[str] = []

        def create(server: Any) -> Any:
            def call() -> Any:
                resp = s.request(server, "POST", "/v1/allocations",
                                 {"resource_class": self.rc()})
                if resp is not None and resp.status_code == 201:
                    made.append(resp.json()["uuid"])
            return call

        def delete(server: Any, delay: float) -> Any:
            def call() -> Any:
                time.sleep(delay)
                if made:
                    victim = made.pop(s.rng.randrange(len(made)))
                    s.request(server, "DELETE", f"/v1/allocations/{victim}")
            return call

        for round_ in range(_harness.rounds(3, 10)):
            s.fault(f"storm round {round_}")
            s.together([create(s.rng.choice(servers)) for _ in range(5)]
                       + [delete(s.rng.choice(servers),
                                 s.rng.uniform(0, 0.5))
                          for _ in range(3)])
            s.settle_and_check(timeout=60, claims=self._claims)
        self.assert_no_violations()


_harness.classes_for(_PlacementTakeover, globals())
_harness.classes_for(_PlacementStorm, globals(), kinds=(
    ("sqlite", "postgresql", "mysql") if _harness.soak() else ("sqlite",)))
