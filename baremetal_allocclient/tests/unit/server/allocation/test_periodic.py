"""The conductor's periodic rounds: woken at once, failures survived."""

from __future__ import annotations

import threading

import pymysql
import testtools
from sqlalchemy.exc import OperationalError

from baremetal_allocclient.server.allocation.periodic import Periodic

_LOST = OperationalError("SELECT", {}, pymysql.err.OperationalError(
    2013, "Lost connection to server during query"))


class PeriodicTest(testtools.TestCase):
    def test_rounds_survive_failures_and_wake_runs_one_now(self) -> None:
        outcomes: list[BaseException | None] = [_LOST, RuntimeError("bug"),
                                                None]
        ran = threading.Semaphore(0)

        def round_() -> None:
            ran.release()
            failure = outcomes.pop(0) if outcomes else None
            if failure is not None:
                raise failure

        # An hour's interval: every round here is one that wake() started.
        periodic = Periodic("test", 3600.0, round_, "Test round")
        periodic.start()
        self.addCleanup(periodic.stop)
        with self.assertLogs("baremetal_allocclient.server.allocation."
                             "periodic", "WARNING") as logs:
            for _ in range(3):
                periodic.wake()
                self.assertTrue(ran.acquire(timeout=10))
        self.assertIn("Test round skipped, database unavailable",
                      logs.output[0])
        self.assertIn("Test round failed", logs.output[1])
        self.assertEqual([], outcomes)
        periodic.stop()
        self.assertTrue(periodic.stopping)

    def test_no_thread_without_an_interval(self) -> None:
        periodic = Periodic("test", 0, lambda: None, "Test round")
        periodic.start()
        periodic.stop()  # returns at once: nothing to join
        self.assertTrue(periodic.stopping)
