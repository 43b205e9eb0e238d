"""The queue extension's pure decisions (server/logic/waiting.py)."""

from __future__ import annotations

import datetime

import testtools

from baremetal_allocclient.server.allocation.line import waiting

NOW = datetime.datetime(2026, 12, 1, 10, 0, 0)


class DeadlineTests(testtools.TestCase):

    def test_requested_timeout_is_added_to_now(self) -> None:
        self.assertEqual(NOW + datetime.timedelta(seconds=90),
                         waiting.deadline_for(NOW, {"timeout": 90}, 3600))

    def test_no_timeout_waits_the_server_maximum(self) -> None:
        self.assertEqual(NOW + datetime.timedelta(hours=1),
                         waiting.deadline_for(NOW, {}, 3600))

    def test_longer_than_the_maximum_is_refused_not_shortened(self) -> None:
        error = self.assertRaises(waiting.QueueRequestError,
                                  waiting.deadline_for, NOW,
                                  {"timeout": 3601}, 3600)
        self.assertIn("exceeds this server's maximum of 3600 s", str(error))

    def test_non_positive_and_non_finite_are_refused(self) -> None:
        for bad in (0, -1, float("inf"), float("nan")):
            self.assertRaises(waiting.QueueRequestError, waiting.deadline_for,
                              NOW, {"timeout": bad}, 3600)

    def test_expired_at_and_after_the_deadline_only(self) -> None:
        self.assertFalse(waiting.expired(None, NOW))
        self.assertFalse(waiting.expired(
            NOW + datetime.timedelta(microseconds=1), NOW))
        self.assertTrue(waiting.expired(NOW, NOW))

    def test_expiry_reason_names_class_deadline_and_wait(self) -> None:
        reason = waiting.expiry_reason(
            "ci-large", NOW, NOW + datetime.timedelta(seconds=1800))
        self.assertEqual(
            "no available node matching the request became free in "
            "resource class ci-large before the queue deadline "
            "2026-12-01T10:30:00Z after waiting 1800 s", reason)

    def test_view_has_deadline_with_offset_and_position(self) -> None:
        self.assertEqual(
            {"deadline": "2026-12-01T10:00:00+00:00", "position": 3},
            waiting.view(NOW, 3))


class PromiseTests(testtools.TestCase):
    """Which free nodes a group must leave to the allocations in line."""

    def test_each_in_line_gets_one_node_in_arrival_order(self) -> None:
        self.assertEqual({1, 2}, waiting.promise([1, 2, 3], [{1, 2, 3},
                                                           {1, 2, 3}]))

    def test_a_narrow_request_keeps_the_node_only_it_matches(self) -> None:
        # Both only match node 1: one node for the first in line.
        self.assertEqual({1}, waiting.promise([1, 2], [{1}, {1}]))
        # The first could take either; node 1 is the second's only one,
        # so both nodes are kept for the line.
        self.assertEqual({1, 2}, waiting.promise([1, 2], [{1, 2}, {1}]))

    def test_earlier_ones_are_served_first(self) -> None:
        # One node for three in line: the first keeps it.
        self.assertEqual({5}, waiting.promise([5], [{5}, {5}, {5}]))

    def test_nothing_matched_nothing_promised(self) -> None:
        self.assertEqual(set(), waiting.promise([1, 2], [set(), {7}]))
