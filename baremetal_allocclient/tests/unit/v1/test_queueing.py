"""The SDK's waiting-in-line decisions (v1/queueing.py)."""

from __future__ import annotations

import random

import testtools

from baremetal_allocclient.v1 import queueing


def _doc(entry: object) -> dict[str, object]:
    return {"extensions": {"queue": entry}}


class AdvertisedTests(testtools.TestCase):

    def test_version_1_with_a_ceiling(self) -> None:
        self.assertEqual(3600.0, queueing.advertised(
            _doc({"version": 1, "max_timeout": 3600})))

    def test_anything_else_is_not_a_line(self) -> None:
        for doc in (None, {}, {"extensions": []}, _doc(None),
                    _doc({"version": 2, "max_timeout": 10}),
                    _doc({"version": 1}),
                    _doc({"version": 1, "max_timeout": True}),
                    _doc({"version": 1, "max_timeout": 0}),
                    _doc({"version": 1, "max_timeout": float("inf")})):
            self.assertIsNone(queueing.advertised(doc), doc)


class QueueFieldTests(testtools.TestCase):

    def test_what_is_left_rounded_up_within_the_ceiling(self) -> None:
        self.assertEqual({"timeout": 30}, queueing.queue_field(29.2, 3600))
        self.assertEqual({"timeout": 1}, queueing.queue_field(0.01, 3600))
        self.assertEqual({"timeout": 60}, queueing.queue_field(500, 60))

    def test_no_budget_asks_for_the_ceiling(self) -> None:
        self.assertEqual({"timeout": 3600.0},
                         queueing.queue_field(None, 3600.0))


class CapacityFailureTests(testtools.TestCase):

    def test_ironic_and_reference_wordings_of_no_free_node(self) -> None:
        for message in (
            "Failed to process allocation X: no available nodes match "
            "the resource class rc.",
            "Failed to process allocation X: none of the requested nodes "
            "are available and match the resource class rc.",
            "Failed to process allocation X: no suitable nodes have the "
            "requested traits CUSTOM_A.",
            "Failed to process allocation X: could not reserve any of 3 "
            "suitable nodes.",
        ):
            self.assertTrue(queueing.is_capacity_failure(message), message)

    def test_other_failures_are_not_waited_for(self) -> None:
        for message in (None, "", "database is locked",
                        "Unexpected internal error during allocation"):
            self.assertFalse(queueing.is_capacity_failure(message))


class PauseTests(testtools.TestCase):

    def test_full_jitter_under_a_doubling_ceiling(self) -> None:
        pauses = queueing.pauses(random.Random(7))
        taken = [next(pauses) for _ in range(8)]
        ceilings = [1, 2, 4, 8, 15, 15, 15, 15]
        for pause, ceiling in zip(taken, ceilings, strict=True):
            self.assertTrue(0 <= pause <= ceiling, (pause, ceiling))
        self.assertEqual(len(taken), len(set(taken)))


class PositionTests(testtools.TestCase):

    def test_position_only_from_a_well_formed_queue_object(self) -> None:
        self.assertEqual(2, queueing.position({"queue": {"position": 2}}))
        for raw in ({}, {"queue": None}, {"queue": {"position": "2"}},
                    {"queue": {"position": True}}):
            self.assertIsNone(queueing.position(raw))
