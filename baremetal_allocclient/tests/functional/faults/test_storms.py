"""Storms and signals: overlapping operations on few nodes, processes
killed or frozen mid-reservation.

Every round starts its operations together (one barrier) and ends with
the invariant check of :mod:`._invariants`.
"""

from __future__ import annotations

import signal
import time
import uuid as uuidlib
from collections.abc import Callable
from typing import Any

from baremetal_allocclient.tests.functional.faults import _harness
from baremetal_allocclient.tests.functional.multiprocess import _cluster

FAST = _cluster.FAST
HEARTBEAT_TIMEOUT = 3.0
TRAIT = "CUSTOM_FAULT_GOLD"


class _Storms:
    """Create/delete/create storms; backfill, delete, undeploy, PATCH and
    node delete on the same nodes."""

    scenario: _harness.Scenario
    start_server: Any
    enroll: Any
    rc: Any
    deploy: Any
    assert_no_violations: Any

    def test_create_delete_create_storm(self) -> None:
        """Creates of two classes (one with a trait), deletes of what was
        just created and re-creates, from two processes with an
        allocation delay that keeps workers behind the deletes."""
        s = self.scenario
        servers = [self.start_server(*FAST, "--allocation-delay", "0.3")
                   for _ in range(2)]
        fleet = {f"{s.prefix}-a{i}": {"resource_class": self.rc("a"),
                                      "traits": [TRAIT] if i % 2 else []}
                 for i in range(6)}
        fleet.update({f"{s.prefix}-b{i}": {"resource_class": self.rc("b")}
                      for i in range(4)})
        self.enroll(fleet)
        made: list[str] = []
        for round_ in range(_harness.rounds(4, 20)):
            calls = [self._create_call(servers, made) for _ in range(6)]
            calls += [self._delete_call(servers, made) for _ in range(4)]
            s.fault(f"storm round {round_}: {len(calls)} operations")
            s.together(calls)
            s.settle_and_check(timeout=30)
        self.assert_no_violations()

    def _create_call(self, servers: list[Any], made: list[str]
                     ) -> Callable[[], Any]:
        s = self.scenario
        server = s.rng.choice(servers)
        body: dict[str, Any] = {"resource_class": self.rc(
            s.rng.choice("ab"))}
        if body["resource_class"].endswith("-a") and s.rng.random() < 0.5:
            body["traits"] = [TRAIT]

        def call() -> Any:
            resp = s.request(server, "POST", "/v1/allocations", body)
            if resp is not None and resp.status_code == 201:
                made.append(resp.json()["uuid"])
            return resp
        return call

    def _delete_call(self, servers: list[Any], made: list[str]
                     ) -> Callable[[], Any]:
        s = self.scenario
        server = s.rng.choice(servers)
        delay = s.rng.uniform(0, 0.05)

        def call() -> Any:
            time.sleep(delay)  # after some of this round's creates
            if not made:
                return None
            # Mostly the newest: a create right after deleting it is
            # where a reused id would meet the old worker.
            latest = s.rng.random() < 0.7
            victim = made.pop(-1 if latest else s.rng.randrange(len(made)))
            resp = s.request(server, "DELETE", f"/v1/allocations/{victim}")
            # The delete freed something: create into the gap at once.
            return resp, s.request(server, "POST", "/v1/allocations",
                                   {"resource_class": self.rc("b")})
        return call

    def test_release_and_backfill_paths_on_the_same_nodes(self) -> None:
        """Backfill twice, DELETE allocation, undeploy, PATCH
        instance_uuid and node delete, all at once on one node, for a
        few nodes; two processes."""
        s = self.scenario
        servers = [self.start_server(*FAST, "--step-delay", "0.1")
                   for _ in range(2)]
        nodes = list(self.enroll(
            {f"{s.prefix}-n{i}": {"resource_class": self.rc()}
             for i in range(_harness.rounds(6, 20))}).values())
        self.deploy(servers[0], nodes)
        for node in nodes[::3]:
            s.request(servers[0], "PUT", f"/v1/nodes/{node}/maintenance",
                      {"reason": "fault test"})
        for round_ in range(_harness.rounds(2, 5)):
            for node in nodes:
                self._redeploy(servers[0], node)
                s.fault(f"round {round_}: every release path on {node}")
                s.together(self._paths(servers, node))
            s.settle_and_check(timeout=30)
        self.assert_no_violations()

    def _redeploy(self, server: Any, node: str) -> None:
        s = self.scenario
        got = s.request(server, "GET", f"/v1/nodes/{node}")
        if got is not None and got.status_code == 200 and (
            got.json()["provision_state"] == "available"
        ):
            s.request(server, "PUT", f"/v1/nodes/{node}/states/provision",
                      {"target": "active"})
            server.wait_node(node, "active")

    def _paths(self, servers: list[Any], node: str
               ) -> list[Callable[[], Any]]:
        s = self.scenario

        def on(server: Any, method: str, path: str, body: Any = None,
               delay: float = 0.0) -> Callable[[], Any]:
            def call() -> Any:
                time.sleep(delay)
                return s.request(server, method, path, body)
            return call

        a, b = servers
        jitter = [s.rng.uniform(0, 0.15) for _ in range(7)]
        return [
            on(a, "POST", "/v1/allocations",
               {"node": node, "uuid": str(uuidlib.uuid4())}),
            on(b, "POST", "/v1/allocations",
               {"node": node, "uuid": str(uuidlib.uuid4())}),
            on(a, "DELETE", f"/v1/nodes/{node}/allocation", None,
               jitter[2]),
            on(b, "PUT", f"/v1/nodes/{node}/states/provision",
               {"target": "deleted"}, jitter[3]),
            on(a, "PATCH", f"/v1/nodes/{node}",
               [{"op": "remove", "path": "/instance_uuid"}], jitter[4]),
            on(b, "PATCH", f"/v1/nodes/{node}",
               [{"op": "add", "path": "/instance_uuid",
                 "value": str(uuidlib.uuid4())}], jitter[5]),
            on(a, "DELETE", f"/v1/nodes/{node}", None, jitter[6] + 0.1),
        ]


class _Signals:
    """kill -9 and SIGSTOP/SIGCONT of a process mid-reservation."""

    scenario: _harness.Scenario
    start_server: Any
    enroll: Any
    rc: Any
    assert_no_violations: Any

    def _victim_holding(self, count: int, round_: int
                        ) -> tuple[Any, Any, list[str]]:
        s = self.scenario
        survivor = self.start_server(*FAST)
        victim = self.start_server(*FAST, "--allocation-delay", "1")
        self.enroll({f"{s.prefix}-r{round_}n{i}": {"resource_class":
                                                   self.rc()}
                     for i in range(count + 2)})
        made = []
        for _ in range(count):
            resp = s.request(victim, "POST", "/v1/allocations",
                             {"resource_class": self.rc()})
            assert resp is not None and resp.status_code == 201, resp
            made.append(resp.json()["uuid"])
        return survivor, victim, made

    def _check_all_finished(self, made: list[str]) -> None:
        s = self.scenario
        snap = s.settle_and_check(timeout=60)
        for uuid in made:
            stored = snap.by_uuid(uuid)
            if stored is None:
                s.violation(f"allocation {uuid} (201) was lost")
            elif stored.state != "active":
                s.violation(f"allocation {uuid} ended {stored.state} "
                            f"with free nodes left: {stored.last_error}")

    def test_kill_9_mid_reservation(self) -> None:
        """The victim's workers wake after 1 s and reserve; it is killed
        in that window; a survivor finishes every allocation."""
        s = self.scenario
        for round_ in range(_harness.rounds(1, 4)):
            _survivor, victim, made = self._victim_holding(10, round_)
            time.sleep(s.rng.uniform(0.9, 1.3))
            s.note(f"round {round_}")
            s.signal(victim, signal.SIGKILL)
            self._check_all_finished(made)
        self.assert_no_violations()

    def test_sigstop_mid_reservation_then_sigcont(self) -> None:
        """The victim is frozen while reserving, declared dead, taken
        over, then woken: its stale workers must not write anything."""
        s = self.scenario
        for round_ in range(_harness.rounds(1, 4)):
            _survivor, victim, made = self._victim_holding(10, round_)
            time.sleep(s.rng.uniform(0.9, 1.3))
            s.note(f"round {round_}")
            s.signal(victim, signal.SIGSTOP)
            # Declared dead, then taken over and finished meanwhile.
            snap = s.wait_settled(timeout=HEARTBEAT_TIMEOUT + 30)
            active = [a for a in snap.allocations.values()
                      if a.state == "active"]
            s.note(f"{len(active)} active while the victim is frozen")
            s.signal(victim, signal.SIGCONT)
            time.sleep(2)  # let the woken workers act before checking
            self._check_all_finished(made)
        self.assert_no_violations()


for _mixin in (_Storms, _Signals):
    _harness.classes_for(_mixin, globals())
