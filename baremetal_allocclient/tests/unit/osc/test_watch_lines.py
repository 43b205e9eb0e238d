"""``baremetal allocation watch``: its lines and what a poll reports
(pure)."""

from __future__ import annotations

import json

import testtools

from baremetal_allocclient.osc.v1 import watch


class WatchLinesTest(testtools.TestCase):

    def test_line_and_json(self) -> None:
        record = watch.change_record(
            5, "updated", {"uuid": "u1", "name": None, "state": "active",
                           "node_uuid": "n1"})
        self.assertEqual("5 updated u1 - active n1",
                         watch.format_line(record, "line"))
        self.assertEqual(record, json.loads(watch.format_line(record,
                                                              "json")))
        polled = watch.change_record(None, "created", {"uuid": "u1"})
        self.assertTrue(watch.format_line(polled, "line").startswith("- "))

    def test_polled_changes(self) -> None:
        before = {"u1": {"uuid": "u1", "state": "allocating"},
                  "u2": {"uuid": "u2", "state": "active"}}
        after = {"u1": {"uuid": "u1", "state": "active"},
                 "u3": {"uuid": "u3", "state": "allocating"}}
        found = watch.polled_changes(before, after)
        self.assertEqual([("updated", "u1"), ("created", "u3"),
                          ("deleted", "u2")],
                         [(r["op"], r["allocation"]["uuid"]) for r in found])
        self.assertEqual([], watch.polled_changes(after, after))
