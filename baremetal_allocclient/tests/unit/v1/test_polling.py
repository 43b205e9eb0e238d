"""HTTP-level tests of waiting for allocations (v1/polling.py).
"""

from __future__ import annotations

from typing import Any

import requests_mock

from baremetal_allocclient import exceptions
from baremetal_allocclient.tests.unit.v1 import fakes
from baremetal_allocclient.tests.unit.v1.client_case import (
    ALLOCS,
    ClientTestCase,
    FakeAllocationServer,
    query_of,
)
from baremetal_allocclient.v1 import Allocation


class WaitTest(ClientTestCase):

    def _states(self, uuid: str, *bodies: dict[str, Any]) -> None:
        self.mock.get(ALLOCS + "/" + uuid,
                      [{"json": b, "headers": self.headers()} for b in bodies])

    def test_returns_active_with_backoff(self) -> None:
        self._states("a1", fakes.allocation(), fakes.allocation(),
                     fakes.allocation(state="active", node_uuid="n1"))
        progress: list[Any] = []
        created = Allocation.from_wire(fakes.allocation())
        done = self.client.wait_for_allocation(created,
                                               on_progress=progress.append)
        self.assertEqual(("active", "n1"), (done.state, done.node_uuid))
        self.assertEqual([0.05, 0.1, 0.2], self.clock.sleeps)
        self.assertEqual(3, len(self.history))
        self.assertEqual([1, 1, 1], [p.pending for p in progress])
        self.assertEqual([0, 1, 2], [p.polls for p in progress])

    def test_identifier_is_fetched_at_once(self) -> None:
        self._states("web-1", fakes.allocation(state="active"))
        self.client.wait_for_allocation("web-1")
        self.assertEqual([], self.clock.sleeps)
        self.assertEqual(1, len(self.history))

    def test_error_raises_allocation_failed(self) -> None:
        self._states("a1", fakes.allocation(
            state="error", last_error="No available nodes match"))
        error = self.assertRaises(exceptions.AllocationFailed,
                                  self.client.wait_for_allocation, "a1")
        self.assertEqual("No available nodes match", error.last_error)
        self.assertEqual("a1", error.allocation.uuid)
        self.assertIn("No available nodes match", str(error))

    def test_timeout_names_allocation_and_state(self) -> None:
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation(name="web-1"))
        start = self.clock.now
        error = self.assertRaises(exceptions.WaitTimeout,
                                  self.client.wait_for_allocation, "a1",
                                  timeout=1.0)
        self.assertEqual("allocating", error.last_state)
        self.assertIn("web-1", str(error))
        self.assertIn("allocating", str(error))
        # The last poll leaves FINAL_POLL seconds for its answer.
        self.assertAlmostEqual(start + 0.8, self.clock.now)
        self.assertEqual([0.05, 0.1, 0.2, 0.4], self.clock.sleeps[:4])
        self.assertAlmostEqual(0.05, self.clock.sleeps[4])
        self.assertEqual(6, len(self.history))


class WaitManyTest(ClientTestCase):

    def _serve(self, settle: dict[str, tuple[float, str]]) -> None:
        server = FakeAllocationServer(self.clock, settle)
        # requests-mock prefers the matcher registered last.
        self.mock.get(requests_mock.ANY, json=server.get,
                      headers=self.headers())
        self.mock.get(ALLOCS, json=server.list, headers=self.headers())
        self.created = [Allocation.from_wire(server.body(u)) for u in settle]

    def test_one_list_request_per_round(self) -> None:
        start = self.clock.now
        settle = {f"a{i}": (start + 0.3 + (0.5 if i % 2 else 0), "active")
                  for i in range(10)}
        self._serve(settle)
        rounds: list[int] = []
        done = self.client.wait_for_allocations(
            self.created, on_progress=lambda p: rounds.append(p.pending))
        self.assertEqual(["active"] * 10, [a.state for a in done])
        self.assertEqual(list(settle), [a.uuid for a in done])
        polls = [r for r in self.history
                 if query_of(r).get("state") == ["allocating"]]
        # Rounds at +0.05, 0.15, 0.35 (5 settle), 0.75, 1.55 (5 settle).
        self.assertEqual([0.05, 0.1, 0.2, 0.4, 0.8], self.clock.sleeps)
        self.assertEqual(5, len(polls))
        for request in polls:
            self.assertEqual(["uuid"], query_of(request)["fields"])
            self.assertEqual(["rc"], query_of(request)["resource_class"])
        # Settled ones are fetched with one list each time some settle.
        fetches = [r for r in self.history if r not in polls]
        self.assertEqual(2, len(fetches))
        self.assertEqual(7, len(self.history))
        self.assertEqual([10, 10, 10, 5, 5], rounds)

    def test_errors_raise_after_all_settled(self) -> None:
        start = self.clock.now
        self._serve({"a1": (start + 0.1, "active"),
                     "a2": (start + 0.1, "error"),
                     "a3": (start + 0.3, "active")})
        error = self.assertRaises(exceptions.AllocationFailed,
                                  self.client.wait_for_allocations,
                                  self.created)
        self.assertEqual("a2", error.allocation.uuid)
        self.assertEqual(["active", "error", "active"],
                         [a.state for a in error.results])

    def test_errors_can_be_returned(self) -> None:
        start = self.clock.now
        self._serve({"a1": (start, "error"), "a2": (start, "active")})
        done = self.client.wait_for_allocations(self.created,
                                                raise_on_error=False)
        self.assertEqual(["error", "active"], [a.state for a in done])

    def test_timeout_lists_the_unfinished(self) -> None:
        start = self.clock.now
        self._serve({"a1": (start + 0.1, "active"),
                     "a2": (start + 99, "active"),
                     "a3": (start + 99, "active")})
        error = self.assertRaises(exceptions.WaitTimeout,
                                  self.client.wait_for_allocations,
                                  self.created, timeout=2.0)
        self.assertEqual(["a2", "a3"], [a.uuid for a in error.allocations])
        self.assertIn("2 allocations", str(error))
        self.assertEqual("active", error.results[0].state)

    def test_identifiers_are_read_first(self) -> None:
        start = self.clock.now
        self._serve({"a1": (start, "active"), "a2": (start, "active")})
        done = self.client.wait_for_allocations(["a1", "a2"])
        self.assertEqual(["active", "active"], [a.state for a in done])
        self.assertEqual(2, len(self.history))
