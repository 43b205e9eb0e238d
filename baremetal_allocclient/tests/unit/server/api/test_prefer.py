"""Parsing of the RFC 7240 ``Prefer`` header for ``wait``."""

from __future__ import annotations

import testtools

from baremetal_allocclient.server.allocation.wait_permits import (
    WaitPermits,
    waiting_capacity,
)
from baremetal_allocclient.server.api.prefer import requested_wait


class RequestedWaitTests(testtools.TestCase):
    def test_whole_seconds_up_to_the_ceiling(self) -> None:
        self.assertEqual(5.0, requested_wait(["wait=5"], 10))
        self.assertEqual(10.0, requested_wait(["wait=600"], 10))
        self.assertEqual(0.0, requested_wait(["wait=0"], 10))

    def test_any_number_of_digits_is_a_long_wait(self) -> None:
        # 400 digits answered 500 after the allocation was stored.
        for digits in (20, 400, 5000, 10_000):
            self.assertEqual(10.0, requested_wait(["wait=" + "9" * digits],
                                                  10), digits)
        self.assertEqual(4.0, requested_wait(["wait=" + "0" * 5000 + "4"],
                                             10))

    def test_no_header_or_no_ceiling_means_answer_now(self) -> None:
        self.assertEqual(0.0, requested_wait([], 10))
        self.assertEqual(0.0, requested_wait(["wait=5"], 0))

    def test_among_other_preferences_and_headers(self) -> None:
        self.assertEqual(3.0, requested_wait(
            ["return=minimal", 'handling=lenient, Wait = "3" ; x=y'], 10))

    def test_first_occurrence_wins(self) -> None:
        self.assertEqual(2.0, requested_wait(["wait=2, wait=9"], 10))

    def test_respond_async_wins_over_wait(self) -> None:
        self.assertEqual(0.0, requested_wait(["wait=5, respond-async"], 10))
        self.assertEqual(0.0, requested_wait(["respond-async", "wait=5"], 10))

    def test_malformed_values_are_ignored(self) -> None:
        for value in ("wait", "wait=", "wait=-1", "wait=+5", "wait=1.5",
                      "wait=abc",
                      "wait=\u0663", ",,;", "=5"):
            self.assertEqual(0.0, requested_wait([value], 10), value)


class WaitPermitsTests(testtools.TestCase):
    def test_at_most_capacity_then_refused_until_released(self) -> None:
        permits = WaitPermits(2)
        self.assertEqual([True, True, False],
                         [permits.try_acquire() for _ in range(3)])
        permits.release()
        self.assertTrue(permits.try_acquire())

    def test_release_without_acquire_is_a_bug(self) -> None:
        self.assertRaises(RuntimeError, WaitPermits(1).release)

    def test_half_of_the_request_threads_at_least_one(self) -> None:
        self.assertEqual([1, 1, 4, 16],
                         [waiting_capacity(n) for n in (1, 2, 8, 32)])
