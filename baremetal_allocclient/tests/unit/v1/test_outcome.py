"""Whether a failed request may have been applied (``outcome_unknown``),
and the current operation's deadline (``budget.bounded``)."""

from __future__ import annotations

import re
from typing import Any

import requests
import testtools

from baremetal_allocclient import exceptions
from baremetal_allocclient.tests.unit.v1 import fakes
from baremetal_allocclient.tests.unit.v1.client_case import (
    ALLOCS,
    ClientTestCase,
    E,
)
from baremetal_allocclient.v1 import budget

RESET = requests.exceptions.ConnectionError(
    "('Connection aborted.', ConnectionResetError(104, "
    "'Connection reset by peer'))")
REFUSED = requests.exceptions.ConnectionError(
    "HTTPConnectionPool(host='127.0.0.1', port=9): Max retries exceeded "
    "(Caused by NewConnectionError('Failed to establish a new connection: "
    "[Errno 111] Connection refused'))")
ANY_ALLOCATION = re.compile(ALLOCS + "/[^/]+$")
V1 = {"id": "v1", "extensions": {
    "queue": {"version": 1, "max_timeout": 600}}}


class OutcomeTest(ClientTestCase):

    def _create_error(self) -> exceptions.ClientError:
        error = self.assertRaises(exceptions.ClientError,
                                  self.client.create_allocation, "rc")
        assert isinstance(error, exceptions.ClientError)
        return error

    def test_a_refusal_is_definite(self) -> None:
        for status in (400, 409):
            self.mock.post(ALLOCS, status_code=status,
                           json=fakes.ironic_error("no"))
            self.assertFalse(self._create_error().outcome_unknown, status)

    def test_a_server_error_is_unknown(self) -> None:
        self.mock.post(ALLOCS, status_code=500,
                       json=fakes.ironic_error("boom", "Server"))
        self.assertTrue(self._create_error().outcome_unknown)

    def test_a_refused_connection_is_definite(self) -> None:
        self.mock.post(ALLOCS, exc=REFUSED)
        error = self._create_error()
        self.assertIsInstance(error, exceptions.ConnectionFailed)
        self.assertFalse(error.outcome_unknown)

    def test_a_lost_connection_is_unknown(self) -> None:
        self.mock.post(ALLOCS, exc=RESET)
        error = self._create_error()
        self.assertIsInstance(error, exceptions.ConnectionFailed)
        self.assertTrue(error.outcome_unknown)

    def test_a_refusal_after_a_lost_answer_is_unknown(self) -> None:
        self.mock.post(ALLOCS, [
            {"exc": RESET},
            {"status_code": 409, "json": fakes.ironic_error("exists")}])
        self.mock.get(ANY_ALLOCATION, status_code=404,
                      json=fakes.ironic_error("not found"))
        self.assertTrue(self._create_error().outcome_unknown)

    def test_nothing_sent_after_the_deadline_is_definite(self) -> None:
        deadline = self.client.deadline(1.0)
        self.clock.sleep(1.0)
        error = self.assertRaises(
            exceptions.DeadlineExceeded, self.client.create_allocation,
            "rc", deadline=deadline)
        self.assertFalse(error.outcome_unknown)

    def test_a_failed_discovery_is_definite(self) -> None:
        """The create was not sent: whatever the GET met, nothing was
        made."""
        self.mock.get(E + "/v1", exc=RESET)
        error = self.assertRaises(
            exceptions.ConnectionFailed, self.client.create_allocation,
            "rc", queue=True)
        self.assertFalse(error.outcome_unknown)
        self.assertNotIn("POST", [r.method for r in self.history])

    def test_allocate_deletes_nothing_after_a_refusal(self) -> None:
        self.mock.post(ALLOCS, status_code=409,
                       json=fakes.ironic_error("name exists"))
        self.mock.delete(ANY_ALLOCATION, status_code=404)
        self.assertRaises(exceptions.Conflict, self.client.allocate, "rc",
                          timeout=5)
        self.assertEqual(["POST"], [r.method for r in self.history])

    def test_allocate_deletes_after_a_server_error(self) -> None:
        self.mock.post(ALLOCS, status_code=500,
                       json=fakes.ironic_error("boom", "Server"))
        self.mock.delete(ANY_ALLOCATION, status_code=404)
        self.assertRaises(exceptions.ServerError, self.client.allocate, "rc",
                          timeout=5)
        self.assertEqual("DELETE", self.history[-1].method)


class BoundedTest(ClientTestCase):

    def test_current_follows_the_innermost_operation(self) -> None:
        outer = budget.Deadline(5.0, clock=self.clock)
        inner = budget.Deadline(1.0, clock=self.clock)
        self.assertIsNone(budget.current())
        with budget.bounded(outer):
            self.assertIs(outer, budget.current())
            with budget.bounded(inner):
                self.assertIs(inner, budget.current())
            with budget.bounded(None):
                self.assertIs(outer, budget.current())
            self.assertIs(outer, budget.current())
        self.assertIsNone(budget.current())

    def test_discovery_is_bounded_by_the_operation(self) -> None:
        self.mock.get(E + "/v1", json=V1, headers=self.headers())
        deadline = self.client.deadline(3.0)
        self.clock.sleep(1.0)
        with budget.bounded(deadline):
            self.assertTrue(self.client.supports_queue())
        self.assertAlmostEqual(2.0, self.history[0].timeout)

    def test_allocate_bounds_its_discovery(self) -> None:
        self.mock.get(E + "/v1", json=V1, headers=self.headers())
        self.mock.post(ALLOCS, status_code=409,
                       json=fakes.ironic_error("name exists"))
        self.assertRaises(exceptions.Conflict, self.client.allocate, "rc",
                          timeout=3.0, queue=True)
        self.assertEqual(["GET", "POST"], [r.method for r in self.history])
        self.assertLessEqual(self.history[0].timeout, 3.0)

    def test_the_hold_is_what_the_discovery_left(self) -> None:
        def slow_discovery(request: Any, context: Any) -> dict[str, Any]:
            self.clock.sleep(2.0)
            return V1

        self.mock.get(E + "/v1", json=slow_discovery, headers=self.headers())
        self.mock.post(ALLOCS, status_code=201, json=fakes.allocation())
        self.client.create_allocation(
            "rc", queue=True, prefer_wait=10,
            deadline=self.client.deadline(5.0))
        # 5 s - 2 s of discovery - the 0.5 s margin: wait=2, not wait=4.
        self.assertEqual("wait=2", self.history[-1].headers["Prefer"])

    def test_discovery_is_read_once(self) -> None:
        self.mock.get(E + "/v1", json=V1, headers=self.headers())
        for _ in range(3):
            self.client.supports_queue()
            self.client.supports_groups()
        self.assertEqual(1, len(self.history))


class NoDeadlineTest(testtools.TestCase):

    def test_outside_an_operation_there_is_none(self) -> None:
        self.assertIsNone(budget.current())

    def test_client_errors_default_to_definite(self) -> None:
        self.assertFalse(exceptions.ClientError("x").outcome_unknown)
