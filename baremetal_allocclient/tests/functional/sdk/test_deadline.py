"""One deadline per SDK call, discovery included, and the truth about
left-overs (issue 20, items 3 and 7).

A real SDK client talks to a :class:`FrozenServer` (a loopback listener
that accepts and never answers, or answers only the discovery from a
real reference server), to the real reference server behind the
counting proxy, or to a loopback port nobody listens on.  The time
limits are promises, so they are asserted: a call with ``timeout=N``
ends within N + :data:`MARGIN` seconds, and not long before N (it does
not give up early either).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import fixtures
import testtools

from baremetal_allocclient import constraints, exceptions
from baremetal_allocclient.tests.fixtures.inprocess import serve_for_class
from baremetal_allocclient.tests.fixtures.processes import free_port
from baremetal_allocclient.tests.functional import counting_proxy
from baremetal_allocclient.tests.functional.frozen_server import (
    DISCOVERY,
    FrozenServer,
)
from baremetal_allocclient.v1 import Client

#: The budget of each call, and what a loaded machine may add to it.
BUDGET = 3.0
MARGIN = 1.5
#: A call still running this long after it started is taken to hang.
HANG = BUDGET + 20
#: A constraint: ``--min-cpus 4``.
MIN_CPUS = constraints.from_wire(
    {"properties": [{"key": "cpus", "min": 4}]})


def timed(call: Callable[[], Any]) -> tuple[float, BaseException | None]:
    """Run ``call`` in a thread; seconds it took and what it raised.
    Fails the test if it is still running after :data:`HANG` seconds."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the test
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    start = time.monotonic()
    thread.start()
    thread.join(HANG)
    if thread.is_alive():
        raise AssertionError(f"the call did not end within {HANG} s")
    return time.monotonic() - start, outcome.get("error")


class DeadlineCase(testtools.TestCase):
    """Helpers shared by the cases below."""

    def frozen(self, upstream: str | None = None,
               answers: Any = ()) -> FrozenServer:
        server = FrozenServer(upstream, answers)
        self.addCleanup(server.close)
        return server

    def client(self, endpoint: str) -> Client:
        client = Client.from_endpoint(endpoint)
        self.addCleanup(client.close)
        return client

    def assert_within_budget(self, elapsed: float,
                             error: BaseException | None) -> None:
        self.assertIsInstance(error, exceptions.ClientError)
        self.assertLessEqual(elapsed, BUDGET + MARGIN, error)
        self.assertGreaterEqual(elapsed, BUDGET - 0.3, error)
        self.assertNotIn("\n", str(error))


class TestFrozenServer(DeadlineCase):
    """A server that accepts connections and never answers."""

    def setUp(self) -> None:
        super().setUp()
        self.server = self.frozen()
        self.sdk = self.client(self.server.endpoint)

    def test_plain_allocate(self) -> None:
        elapsed, error = timed(lambda: self.sdk.allocate(
            "rc", timeout=BUDGET))
        self.assert_within_budget(elapsed, error)

    def test_allocate_waiting_in_line(self) -> None:
        elapsed, error = timed(lambda: self.sdk.allocate(
            "rc", timeout=BUDGET, queue=True))
        self.assert_within_budget(elapsed, error)
        self.assertIn("GET http://127.0.0.1", str(error))
        self.assertIn("/v1 within the time limit", str(error))

    def test_constrained_allocate(self) -> None:
        elapsed, error = timed(lambda: self.sdk.allocate(
            "rc", timeout=BUDGET,
            constraints=MIN_CPUS))
        self.assert_within_budget(elapsed, error)

    def test_allocate_group(self) -> None:
        elapsed, error = timed(lambda: self.sdk.allocate_group(
            2, "rc", name="g", timeout=BUDGET))
        self.assert_within_budget(elapsed, error)
        self.assertIsInstance(error, exceptions.GroupFailed)
        # Discovery got no answer: no create was sent, nothing is left.
        self.assertNotIn("deleted", str(error))
        self.assertEqual([], self.server.requests("POST"))


class TestFrozenAfterDiscovery(DeadlineCase):
    """A server that answers the discovery, then freezes: the creates'
    outcome is unknown, so they are still cleaned up (and reported)."""

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.reference = serve_for_class(cls)

    def setUp(self) -> None:
        super().setUp()
        self.server = self.frozen(self.reference.endpoint, DISCOVERY)
        self.sdk = self.client(self.server.endpoint)
        self.log = self.useFixture(fixtures.FakeLogger(level=logging.DEBUG))

    def test_constrained_allocate_cleans_up(self) -> None:
        elapsed, error = timed(lambda: self.sdk.allocate(
            "rc", timeout=BUDGET,
            constraints=MIN_CPUS))
        self.assert_within_budget(elapsed, error)
        posted = self.server.requests("POST")
        self.assertEqual(["/v1/allocations"], posted)
        deletes = self.server.requests("DELETE")
        self.assertEqual(1, len(deletes), self.server.seen)
        self.assertIn("Could not delete allocation", self.log.output)

    def test_group_reports_what_may_be_left(self) -> None:
        elapsed, error = timed(lambda: self.sdk.allocate_group(
            2, "rc", name="g", timeout=BUDGET))
        self.assert_within_budget(elapsed, error)
        self.assertIsInstance(error, exceptions.GroupFailed)
        assert isinstance(error, exceptions.GroupFailed)
        self.assertEqual(2, len(error.left), error)
        self.assertEqual(["/v1/allocation_groups"],
                         self.server.requests("POST"))

    def test_discovery_is_read_once_per_client(self) -> None:
        self.assertTrue(self.sdk.supports_queue())
        self.assertTrue(self.sdk.supports_groups())
        self.assertTrue(self.sdk.supports_constraints())
        for _ in range(2):
            _elapsed, error = timed(lambda: self.sdk.allocate(
                "rc", timeout=1, queue=True,
                constraints=MIN_CPUS))
            self.assertIsInstance(error, exceptions.ClientError)
        v1 = [p for p in self.server.requests("GET")
              if p.split("?")[0].rstrip("/") == "/v1"]
        self.assertEqual(1, len(v1), self.server.seen)


class TestNothingLeft(DeadlineCase):
    """A create the server refused, or that never reached it, made
    nothing: allocate() deletes nothing and logs nothing about it."""

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.reference = serve_for_class(cls)
        cls.nodes = cls.reference.make_nodes(1, "rc-left")

    def setUp(self) -> None:
        super().setUp()
        self.proxy = counting_proxy.CountingProxy(self.reference.endpoint)
        self.addCleanup(self.proxy.close)
        self.sdk = self.client(self.proxy.endpoint)
        self.log = self.useFixture(fixtures.FakeLogger(level=logging.DEBUG))

    def _assert_nothing_deleted(self, error: BaseException | None) -> None:
        methods = [method for method, _path, _status in self.proxy.take()]
        self.assertNotIn("DELETE", methods, error)
        self.assertNotIn("Could not delete", self.log.output)

    def test_duplicate_name_is_not_left(self) -> None:
        made = self.sdk.allocate("rc-left", name="dup-sdk", timeout=30)
        self.addCleanup(self.sdk.delete_allocation, str(made.uuid),
                        ignore_missing=True)
        self.proxy.take()
        _elapsed, error = timed(lambda: self.sdk.allocate(
            "rc-left", name="dup-sdk", timeout=30))
        self.assertIsInstance(error, exceptions.Conflict)
        self._assert_nothing_deleted(error)

    def test_invalid_trait_is_not_left(self) -> None:
        _elapsed, error = timed(lambda: self.sdk.allocate(
            "rc-left", traits=["not-a-trait"], timeout=30))
        self.assertIsInstance(error, exceptions.HttpError)
        assert isinstance(error, exceptions.HttpError)
        self.assertLess(error.status_code, 500, error)
        self._assert_nothing_deleted(error)

    def test_refused_connection_is_not_left(self) -> None:
        sdk = self.client(f"http://127.0.0.1:{free_port()}")
        _elapsed, error = timed(lambda: sdk.allocate("rc", timeout=5))
        self.assertIsInstance(error, exceptions.ConnectionFailed)
        self.assertNotIn("Could not delete", self.log.output)
