"""A stateful hypothesis machine whose steps run concurrently.

A step is not one call: it is "start these k operations together" (one
barrier), drawn from create (plain, with a trait, with candidates, with the
constraints extension: a ``cpus`` minimum, a forbidden trait, a shard),
delete, backfill, deploy, undeploy, PATCH ``instance_uuid`` (remove and
set), maintenance and node delete, on a small fleet served by two
processes with an allocation delay.  After every step the invariants of
:mod:`._invariants` are checked (after a bounded settle wait).

The examples come from the scenario's seed (printed, and set with
``BAREMETAL_ALLOC_FAULT_SEED``); CI runs a few short examples,
``BAREMETAL_ALLOC_FAULT_SOAK=1`` many longer ones.  Shrinking is off:
each step costs real requests, and the schedule already says what ran.
"""

from __future__ import annotations

import time
import uuid as uuidlib
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)

from baremetal_allocclient.tests.functional.faults import _harness
from baremetal_allocclient.tests.functional.multiprocess import _cluster

FLEET = 5
TRAIT = "CUSTOM_FAULT_GOLD"
#: Nodes 2 and 4 of the fleet satisfy these (cpus 8*(i+1), the trait on
#: odd nodes, shard s0 on even ones).
CONSTRAINTS = {"properties": [{"key": "cpus", "min": 16}],
               "forbidden_traits": [TRAIT], "shard": "s0"}
_EXTENSION = {"X-Baremetal-Alloc-Extensions": "constraints"}
OPERATIONS = ("create", "create_trait", "create_candidate",
              "create_constrained", "delete",
              "backfill", "deploy", "undeploy", "patch_remove", "patch_set",
              "maintenance", "delete_node")
_operation = st.tuples(st.sampled_from(OPERATIONS),
                       st.integers(0, FLEET - 1), st.integers(0, 1),
                       st.floats(0, 0.2))


class ConcurrentFleet(RuleBasedStateMachine):
    """One example: a fresh fleet of its own resource class."""

    case: Any = None  # the running test case, set by the test
    servers: list[Any] = []
    examples = 0

    def __init__(self) -> None:
        super().__init__()
        case = type(self).case
        type(self).examples += 1
        self.s: _harness.Scenario = case.scenario
        self.rc = case.rc(f"m{type(self).examples}")
        names = {f"{self.rc}-n{i}": {
            "resource_class": self.rc,
            "traits": [TRAIT] if i % 2 else [],
            "properties": {"cpus": 8 * (i + 1)},
            "shard": f"s{i % 2}"} for i in range(FLEET)}
        by_name = case.enroll(names)
        self.nodes = [by_name[name] for name in names]
        self.made: list[str] = []
        # Violations found before this example (hypothesis re-runs a
        # failing example to report it) are not this example's.
        self.seen = len(self.s.found)
        self.s.note(f"example {type(self).examples}: fleet {self.nodes}")

    @rule(operations=st.lists(_operation, min_size=2, max_size=5))
    def together(self, operations: list[tuple[str, int, int, float]]
                 ) -> None:
        """Start every operation at once."""
        self.s.fault("concurrent step: " + ", ".join(
            f"{op}@n{n}/p{p}+{d:.2f}" for op, n, p, d in operations))
        self.s.together([self._call(*o) for o in operations])

    @invariant()
    def invariants_hold(self) -> None:
        self.s.settle_and_check(timeout=30)
        if len(self.s.found) > self.seen:
            raise AssertionError(self.s.report())

    def _call(self, op: str, node_index: int, process: int,
              delay: float) -> Callable[[], Any]:
        server = type(self).servers[process]
        node = self.nodes[node_index]
        method, path, body = self._request(op, node)
        headers = _EXTENSION if op == "create_constrained" else None

        def call() -> Any:
            if delay:
                time.sleep(delay)
            resp = self.s.request(server, method, path, body, headers)
            if op.startswith("create") and resp is not None and (
                resp.status_code == 201
            ):
                self.made.append(resp.json()["uuid"])
            return resp
        return call

    def _request(self, op: str, node: str) -> tuple[str, str, Any]:
        provision = f"/v1/nodes/{node}/states/provision"
        create: dict[str, Any] = {"resource_class": self.rc}
        requests: dict[str, tuple[str, str, Any]] = {
            "create": ("POST", "/v1/allocations", create),
            "create_trait": ("POST", "/v1/allocations",
                             {**create, "traits": [TRAIT]}),
            "create_candidate": ("POST", "/v1/allocations",
                                 {**create, "candidate_nodes": [node]}),
            "create_constrained": ("POST", "/v1/allocations",
                                   {**create, "constraints": CONSTRAINTS}),
            "delete": self._delete(node),
            "backfill": ("POST", "/v1/allocations",
                         {"node": node, "uuid": str(uuidlib.uuid4())}),
            "deploy": ("PUT", provision, {"target": "active"}),
            "undeploy": ("PUT", provision, {"target": "deleted"}),
            "patch_remove": ("PATCH", f"/v1/nodes/{node}",
                             [{"op": "remove", "path": "/instance_uuid"}]),
            "patch_set": ("PATCH", f"/v1/nodes/{node}",
                          [{"op": "add", "path": "/instance_uuid",
                            "value": str(uuidlib.uuid4())}]),
            "maintenance": ("PUT", f"/v1/nodes/{node}/maintenance",
                            {"reason": "fault machine"}),
            "delete_node": ("DELETE", f"/v1/nodes/{node}", None),
        }
        return requests[op]

    def _delete(self, node: str) -> tuple[str, str, Any]:
        if self.made and self.s.rng.random() < 0.6:
            uuid = self.made.pop(self.s.rng.randrange(len(self.made)))
            return "DELETE", f"/v1/allocations/{uuid}", None
        return "DELETE", f"/v1/nodes/{node}/allocation", None


class _Machine:
    scenario: _harness.Scenario
    start_server: Any
    assert_no_violations: Any

    def test_concurrent_steps_keep_the_invariants(self) -> None:
        s = self.scenario
        servers = [self.start_server(*_cluster.FAST, "--step-delay", "0.05",
                                     "--allocation-delay", "0.2")
                   for _ in range(2)]
        machine = type("Fleet", (ConcurrentFleet,), {
            "case": self, "servers": servers, "examples": 0})

        def factory() -> ConcurrentFleet:
            return machine()

        factory._hypothesis_internal_use_seed = s.seed  # type: ignore[attr-defined]
        try:
            self._run(factory)
        except Exception:
            # A violation that did not recur when hypothesis replayed the
            # example ends as a "flaky" error: report the violation.
            self.assert_no_violations()
            raise
        s.note(f"{machine.examples} examples run")
        self.assert_no_violations()

    def _run(self, factory: Any) -> None:
        run_state_machine_as_test(factory, settings=settings(
            max_examples=_harness.rounds(2, 40),
            stateful_step_count=_harness.rounds(5, 25),
            deadline=None, database=None, derandomize=False,
            phases=(Phase.explicit, Phase.generate),
            suppress_health_check=list(HealthCheck),
        ))


_harness.classes_for(_Machine, globals())
