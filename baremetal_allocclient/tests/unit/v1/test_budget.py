"""One time budget per operation, idempotent creates, client life cycle."""

from __future__ import annotations

import signal
from typing import Any

import requests
import testtools

from baremetal_allocclient import exceptions
from baremetal_allocclient.tests.unit.v1 import fakes
from baremetal_allocclient.tests.unit.v1.client_case import (
    ALLOCS,
    ClientTestCase,
)
from baremetal_allocclient.v1 import (
    Allocation,
    allocations,
    budget,
    interrupts,
)

RESET = requests.exceptions.ConnectionError(
    "('Connection aborted.', ConnectionResetError(104, "
    "'Connection reset by peer'))")


class DeadlineTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.clock = fakes.FakeClock()

    def test_remaining_and_request_timeout(self) -> None:
        deadline = budget.Deadline(3.0, clock=self.clock)
        self.clock.sleep(1.0)
        self.assertEqual(2.0, deadline.remaining())
        self.assertEqual(2.0, deadline.request_timeout(None))
        self.assertEqual(1.5, deadline.request_timeout(1.5))
        self.clock.sleep(2.5)
        self.assertEqual(0.0, deadline.remaining())
        self.assertTrue(deadline.expired())

    def test_unlimited(self) -> None:
        deadline = budget.unlimited(self.clock)
        self.clock.sleep(1e6)
        self.assertIsNone(deadline.remaining())
        self.assertFalse(deadline.expired())
        self.assertEqual(7.0, deadline.request_timeout(7.0))
        self.assertEqual(10.0, deadline.hold(10.0))

    def test_hold_leaves_a_margin(self) -> None:
        for seconds, hold in ((15.0, 10.0), (3.0, 2.5), (1.0, 0.5)):
            deadline = budget.Deadline(seconds, clock=self.clock)
            self.assertEqual(hold, deadline.hold(10.0))

    def test_pauses_leave_room_for_a_last_poll(self) -> None:
        deadline = budget.Deadline(1.0, clock=self.clock)
        self.assertEqual(0.5, deadline.next_pause(0.5))
        self.clock.sleep(0.5)
        self.assertAlmostEqual(0.3, deadline.next_pause(2.0))
        self.clock.sleep(0.3)
        self.assertIsNone(deadline.next_pause(2.0))

    def test_negative_budget_is_refused(self) -> None:
        self.assertRaises(exceptions.InvalidArgument, budget.Deadline, -1.0)

    def test_a_budget_no_wait_can_hold_is_no_limit(self) -> None:
        """``allocate(timeout=1e300)`` raised an OverflowError from a
        thread's wait; beyond what a wait can be told it is no limit."""
        for seconds in (1e300, float("inf")):
            deadline = budget.Deadline(seconds, clock=self.clock)
            self.assertIsNone(deadline.remaining())
            self.assertFalse(deadline.expired())
        self.assertEqual(9e9, budget.Deadline(9e9).seconds)


class TransportBudgetTest(ClientTestCase):

    def test_each_request_times_out_when_the_budget_ends(self) -> None:
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        deadline = self.client.deadline(3.0)
        self.clock.sleep(1.0)
        self.assertRaises(exceptions.WaitTimeout,
                          self.client.wait_for_allocation, "a1",
                          deadline=deadline)
        timeouts = [r.timeout for r in self.history]
        self.assertAlmostEqual(2.0, timeouts[0])
        self.assertTrue(all(t <= 2.0 for t in timeouts), timeouts)
        self.assertLessEqual(self.clock.now, deadline.start + 3.0)

    def test_no_request_starts_after_the_deadline(self) -> None:
        deadline = self.client.deadline(1.0)
        self.clock.sleep(1.0)
        self.assertRaises(exceptions.DeadlineExceeded,
                          self.client.create_allocation, "rc",
                          deadline=deadline)
        self.assertEqual([], self.history)

    def test_retries_stop_when_the_delay_does_not_fit(self) -> None:
        self.mock.get(ALLOCS + "/a1", status_code=503)
        deadline = self.client.deadline(0.6)
        self.assertRaises(exceptions.ServiceUnavailable,
                          allocations.get, self.client, "a1", deadline)
        # 0.25 fits, 0.5 would not: two attempts, never past the budget.
        self.assertEqual(2, len(self.history))
        self.assertEqual([0.25], self.clock.sleeps)

    def test_allocate_counts_the_create_against_its_timeout(self) -> None:
        """The Prefer hold is part of the budget, not added to it."""
        def slow_create(request: Any, context: Any) -> dict[str, Any]:
            self.clock.sleep(2.5)  # the server held its answer
            return fakes.allocation()

        self.mock.post(ALLOCS, status_code=201, json=slow_create)
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        self.mock.delete(ALLOCS + "/a1", status_code=204)
        start = self.clock.now
        self.assertRaises(exceptions.WaitTimeout, self.client.allocate,
                          "rc", timeout=3.0)
        self.assertEqual("wait=2", self.history[0].headers["Prefer"])
        self.assertLessEqual(self.clock.now - start, 3.0)
        self.assertEqual("DELETE", self.history[-1].method)


class IdempotentCreateTest(ClientTestCase):

    def test_lost_answer_then_conflict_returns_the_first(self) -> None:
        sent: list[str] = []

        def first_lost(request: Any, context: Any) -> dict[str, Any]:
            sent.append(request.json()["uuid"])
            if len(sent) == 1:
                raise RESET
            context.status_code = 409
            return fakes.ironic_error(
                f"An allocation with UUID {sent[0]} already exists.")

        self.mock.post(ALLOCS, json=first_lost)
        self.mock.get(requests_mock_any_allocation(),
                      json=fakes.allocation("made", resource_class="rc"))
        made = self.client.create_allocation("rc")
        self.assertEqual("made", made.uuid)
        self.assertEqual(2, len(sent))
        self.assertEqual(sent[0], sent[1], "the retry reuses the UUID")
        self.assertEqual(f"{ALLOCS}/{sent[0]}", self.history[-1].url)

    def test_conflict_on_the_first_attempt_is_raised(self) -> None:
        self.mock.post(ALLOCS, status_code=409, json=fakes.ironic_error(
            "An allocation with UUID u1 already exists."))
        self.assertRaises(exceptions.Conflict, self.client.create_allocation,
                          "rc", uuid="u1")
        self.assertEqual(1, len(self.history))

    def test_someone_elses_allocation_is_not_returned(self) -> None:
        self.mock.post(ALLOCS, [
            {"exc": RESET},
            {"status_code": 409, "json": fakes.ironic_error("exists")}])
        self.mock.get(ALLOCS + "/u1",
                      json=fakes.allocation("u1", resource_class="other"))
        self.assertRaises(exceptions.Conflict, self.client.create_allocation,
                          "rc", uuid="u1")

    def test_reset_of_a_delete_is_not_repeated(self) -> None:
        self.mock.delete(ALLOCS + "/a1", [
            {"exc": RESET}, {"status_code": 204}])
        self.assertRaises(exceptions.ConnectionFailed,
                          self.client.delete_allocation, "a1")
        self.assertEqual(1, len(self.history))


def requests_mock_any_allocation() -> Any:
    import re

    return re.compile(ALLOCS + "/[^/]+$")


class LifeCycleTest(ClientTestCase):

    def test_close_and_context_manager(self) -> None:
        closed: list[bool] = []
        with self.client as client:
            http = client._transport.adapter.session.session
            original = http.close
            http.close = lambda: (closed.append(True), original())
        self.assertEqual([True], closed)

    def test_list_state_is_checked_locally(self) -> None:
        error = self.assertRaises(exceptions.InvalidArgument,
                                  self.client.list_allocations,
                                  state="bogus")
        self.assertIn("allocating, active, error", str(error))
        self.assertEqual([], self.history)


class AllocateInterruptTest(ClientTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.mock.post(ALLOCS, status_code=201, json=fakes.allocation())
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        self.mock.delete(ALLOCS + "/a1", status_code=204)

    def test_ctrl_c_deletes_the_allocation(self) -> None:
        def interrupt(progress: Any) -> None:
            if progress.polls:
                raise KeyboardInterrupt

        self.assertRaises(KeyboardInterrupt, self.client.allocate, "rc",
                          on_progress=interrupt)
        self.assertEqual("DELETE", self.history[-1].method)

    def test_sigterm_deletes_then_terminates(self) -> None:
        killed: list[int] = []
        self.patch(interrupts, "finish_termination",
                   lambda exc: killed.append(exc.signum))

        def terminate(progress: Any) -> None:
            if progress.polls:
                signal.raise_signal(signal.SIGTERM)

        self.assertRaises(exceptions.Terminated, self.client.allocate, "rc",
                          on_progress=terminate)
        self.assertEqual("DELETE", self.history[-1].method)
        self.assertEqual([signal.SIGTERM], killed)
        self.assertIs(signal.SIG_DFL, signal.getsignal(signal.SIGTERM))

    def test_interrupted_create_is_deleted_by_its_uuid(self) -> None:
        sent: list[str] = []

        def interrupted(request: Any, context: Any) -> Allocation:
            sent.append(request.json()["uuid"])
            raise KeyboardInterrupt

        self.mock.post(ALLOCS, json=interrupted)
        self.mock.delete(requests_mock_any_allocation(), status_code=204)
        self.assertRaises(KeyboardInterrupt, self.client.allocate, "rc")
        self.assertEqual(f"{ALLOCS}/{sent[0]}", self.history[-1].url)
        self.assertEqual("DELETE", self.history[-1].method)
