"""Which failures are retried, and the retry schedule."""

from __future__ import annotations

import testtools

from baremetal_allocclient.v1 import retries


class TransientTest(testtools.TestCase):

    def test_statuses(self) -> None:
        locked = ("Node 1be26c0b is locked by host conductor-1, please retry "
                  "after the current operation is completed.")
        table = [
            (503, None, True),
            (503, "maintenance", True),
            (409, locked, True),
            (409, "An allocation with UUID a1 already exists.", False),
            (409, "Node n1 is in state active, cannot delete", False),
            (409, None, False),
            (500, "database is locked", False),  # a POST
            (502, None, False),
            (404, None, False),
            (400, "is locked", False),
        ]
        for status, message, expected in table:
            self.assertEqual(expected,
                             retries.is_transient_status(status, message),
                             (status, message))

    def test_sqlite_locked_is_repeated_where_a_repeat_is_harmless(
            self) -> None:
        # Ironic on SQLite, a write meeting another's lock.
        locked = ("(sqlite3.OperationalError) database is locked [SQL: "
                  "DELETE FROM allocations WHERE allocations.id = ?]")
        for method, expected in (("DELETE", True), ("delete", True),
                                 ("GET", True), ("HEAD", True),
                                 ("POST", False), ("PATCH", False),
                                 ("PUT", False)):
            self.assertEqual(expected, retries.is_transient_status(
                500, locked, method), method)
        for other in (None, "", "Internal Server Error",
                      "node is locked by host c1"):
            self.assertFalse(retries.is_transient_status(500, other,
                                                         "DELETE"), other)

    def test_delays(self) -> None:
        self.assertEqual([0.25, 0.5, 1.0],
                         list(retries.RetryPolicy().delays()))
        self.assertEqual([1.0, 2.0, 2.0, 2.0], list(retries.RetryPolicy(
            max_retries=4, initial_delay=1.0, max_delay=2.0).delays()))
        self.assertEqual([], list(retries.NO_RETRIES.delays()))

    def test_retry_after(self) -> None:
        policy = retries.RetryPolicy(max_delay=2.0)
        self.assertEqual(1.0, retries.retry_after("1", policy))
        self.assertEqual(2.0, retries.retry_after("120", policy))
        for useless in (None, "", "-1",
                        "Wed, 21 Oct 2015 07:28:00 GMT"):
            self.assertIsNone(retries.retry_after(useless, policy))
