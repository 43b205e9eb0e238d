"""The metrics' pure parts: labels kept bounded, the audit line, the
instruments' names and labels."""

from __future__ import annotations

import datetime
import json
import logging
from typing import Any

import fixtures
import testtools
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from baremetal_allocclient.server.domain.recording import (
    REQUEST,
    Change,
    RequestInfo,
)
from baremetal_allocclient.server.metrics import audit, fleet
from baremetal_allocclient.server.metrics.instruments import Instruments


def _samples(instruments: Instruments
             ) -> dict[tuple[str, tuple[Any, ...]], float]:
    """(sample name, sorted labels) -> value, as exported."""
    found = {}
    text = generate_latest(instruments.registry).decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = \
                sample.value
    return found


class ClassLabelTests(testtools.TestCase):
    def test_the_largest_classes_are_named_the_rest_are_other(self) -> None:
        counts = {(f"rc-{i:02d}", "available"): i + 1
                  for i in range(fleet.MAX_CLASSES + 5)}
        counts[(None, "other")] = 1
        label = fleet.classes_named(counts)
        named = {label(f"rc-{i:02d}") for i in range(fleet.MAX_CLASSES + 5)}
        self.assertEqual(fleet.MAX_CLASSES + 1, len(named))  # and "other"
        self.assertIn(fleet.OTHER, named)
        self.assertEqual("rc-24", label("rc-24"))  # the largest
        self.assertEqual(fleet.OTHER, label("rc-00"))  # the smallest
        self.assertEqual(fleet.NONE, label(None))


class AuditTests(testtools.TestCase):
    CHANGE = Change("a-uuid", "proj", "active", "deleted", "n-uuid",
                    "request")

    def test_the_record_names_who_what_and_the_node(self) -> None:
        token = REQUEST.set(RequestInfo("req-1", "alice", "proj"))
        self.addCleanup(REQUEST.reset, token)
        self.assertEqual(
            {"event": "allocation", "request_id": "req-1", "user": "alice",
             "project": "proj", "actor": "request",
             "allocation": "a-uuid", "owner": "proj", "before": "active",
             "after": "deleted", "node": "n-uuid"},
            audit.record(self.CHANGE))

    def test_a_worker_change_has_no_request(self) -> None:
        entry = audit.record(Change("a", None, "allocating", "active", "n",
                                    "worker"))
        self.assertIsNone(entry["request_id"])
        self.assertEqual("-", audit.as_text(entry).split()[1].split("=")[1])

    def test_text_quotes_what_would_break_the_line(self) -> None:
        text = audit.as_text({"user": 'a b"c', "fields": ["name", "extra"]})
        self.assertEqual('user="a b\\"c" fields=name,extra', text)

    def test_one_line_as_text_or_json(self) -> None:
        logged = self.useFixture(fixtures.FakeLogger(
            name="baremetal_allocclient.audit", level=logging.INFO))
        audit.AuditLog(as_json=True).write(self.CHANGE)
        audit.AuditLog().write(self.CHANGE)
        json_line, text_line = logged.output.splitlines()
        self.assertEqual("deleted", json.loads(json_line)["after"])
        self.assertIn("after=deleted node=n-uuid", text_line)


class InstrumentTests(testtools.TestCase):
    def test_what_is_recorded_is_exported_per_conductor(self) -> None:
        instruments = Instruments("c1")
        at = datetime.datetime(2026, 1, 1, 0, 0, 10)
        instruments.settled("active", at - datetime.timedelta(seconds=2),
                            True, at)
        instruments.failed("traits")
        instruments.released("api")
        instruments.took_over(3)
        instruments.took_over(0)
        instruments.request("/v1/allocations", "POST", 201, 0.01)
        found = _samples(instruments)
        c1 = ("conductor", "c1")
        self.assertEqual(1.0, found[(
            "baremetal_alloc_allocations_settled_total",
            (c1, ("state", "active")))])
        self.assertEqual(2.0, found[(
            "baremetal_alloc_allocation_seconds_sum",
            (c1, ("state", "active")))])
        self.assertEqual(1.0, found[(
            "baremetal_alloc_line_wait_seconds_count",
            (c1, ("state", "active")))])
        self.assertEqual(1.0, found[(
            "baremetal_alloc_allocation_failures_total",
            (c1, ("step", "traits")))])
        self.assertEqual(3.0, found[(
            "baremetal_alloc_orphans_claimed_total", (c1,))])
        self.assertEqual(1.0, found[(
            "baremetal_alloc_takeover_rounds_total", (c1,))])
        self.assertEqual(1.0, found[(
            "baremetal_alloc_http_requests_total",
            (c1, ("method", "POST"), ("route", "/v1/allocations"),
             ("status", "201")))])
