"""Parsing of the RFC 7240 ``Prefer`` header for ``wait``."""

from __future__ import annotations

import testtools

from baremetal_allocclient.server.api.prefer import requested_wait


class RequestedWaitTests(testtools.TestCase):
    def test_whole_seconds_up_to_the_ceiling(self) -> None:
        self.assertEqual(5.0, requested_wait(["wait=5"], 10))
        self.assertEqual(10.0, requested_wait(["wait=600"], 10))
        self.assertEqual(0.0, requested_wait(["wait=0"], 10))

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
        for value in ("wait", "wait=", "wait=-1", "wait=1.5", "wait=abc",
                      "wait=\u0663", ",,;", "=5"):
            self.assertEqual(0.0, requested_wait([value], 10), value)
