"""HTTP-level tests of ``allocate()`` (v1/reservation.py): create,
wait, and delete on failure.
"""

from __future__ import annotations

from typing import Any

from baremetal_allocclient import exceptions
from baremetal_allocclient.tests.unit.v1 import fakes
from baremetal_allocclient.tests.unit.v1.client_case import (
    ALLOCS,
    ClientTestCase,
)


class AllocateTest(ClientTestCase):
    """One allocation made active, or nothing left."""

    def _states(self, uuid: str, *bodies: dict[str, Any]) -> None:
        self.mock.get(ALLOCS + "/" + uuid,
                      [{"json": b, "headers": self.headers()} for b in bodies])

    def test_allocate_deletes_on_error(self) -> None:
        self.mock.post(ALLOCS, status_code=201, json=fakes.allocation())
        self._states("a1", fakes.allocation(state="error",
                                            last_error="no nodes"))
        self.mock.delete(ALLOCS + "/a1", status_code=204)
        self.assertRaises(exceptions.AllocationFailed,
                          self.client.allocate, "rc")
        self.assertEqual(["POST", "GET", "DELETE"],
                         [r.method for r in self.history])

    def test_allocate_deletes_on_timeout(self) -> None:
        self.mock.post(ALLOCS, status_code=201, json=fakes.allocation())
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        self.mock.delete(ALLOCS + "/a1", status_code=204)
        self.assertRaises(exceptions.WaitTimeout, self.client.allocate,
                          "rc", timeout=0.5)
        self.assertEqual("DELETE", self.history[-1].method)

    def test_allocate_keeps_error_when_cleanup_fails(self) -> None:
        self.mock.post(ALLOCS, status_code=201, json=fakes.allocation())
        self._states("a1", fakes.allocation(state="error",
                                            last_error="no nodes"))
        self.mock.delete(ALLOCS + "/a1", status_code=500)
        error = self.assertRaises(exceptions.AllocationFailed,
                                  self.client.allocate, "rc")
        self.assertEqual("no nodes", error.last_error)

    def test_allocate_success_keeps_allocation(self) -> None:
        self.mock.post(ALLOCS, status_code=201, json=fakes.allocation())
        self._states("a1", fakes.allocation(state="active", node_uuid="n"))
        self.assertEqual("n", self.client.allocate("rc").node_uuid)
        self.assertNotIn("DELETE", [r.method for r in self.history])

    def test_allocate_settled_by_the_answer_is_one_request(self) -> None:
        self.mock.post(ALLOCS, status_code=201, json=fakes.allocation(
            state="active", node_uuid="n"))
        self.assertEqual("n", self.client.allocate("rc").node_uuid)
        self.assertEqual(["POST"], [r.method for r in self.history])
        self.assertEqual("wait=10", self.history[0].headers["Prefer"])

    def test_allocate_asks_for_no_longer_than_its_timeout(self) -> None:
        self.mock.post(ALLOCS, status_code=201, json=fakes.allocation(
            state="active", node_uuid="n"))
        self.client.allocate("rc", timeout=3.7)
        self.assertEqual("wait=3", self.history[-1].headers["Prefer"])
        self.client.allocate("rc", timeout=0.5)
        self.assertNotIn("Prefer", self.history[-1].headers)
