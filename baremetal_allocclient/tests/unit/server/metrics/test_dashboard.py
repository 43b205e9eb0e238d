"""The Grafana dashboard asks only for series the server exports."""

from __future__ import annotations

import json
import os
import re

import testtools

from baremetal_allocclient.server.metrics.endpoints import Metrics
from baremetal_allocclient.tests.unit.server._sqlite import SQLiteDatabase

DASHBOARD = os.path.join(
    os.path.dirname(__file__), *[os.pardir] * 5, "doc", "source",
    "_static", "metrics", "grafana-dashboard.json")
_SERIES = re.compile(r"\bbaremetal_alloc_[a-z_]+")
_SUFFIXES = ("", "_total", "_created", "_bucket", "_count", "_sum")


class DashboardTests(testtools.TestCase):
    def test_every_series_asked_for_is_exported(self) -> None:
        db = self.useFixture(SQLiteDatabase()).db
        families = {family.name for family in
                    Metrics(db, "c1").registry.collect()}
        exported = {name + suffix for name in families
                    for suffix in _SUFFIXES}
        with open(DASHBOARD, encoding="utf-8") as source:
            panels = json.load(source)["panels"]
        asked = {series for panel in panels for target in panel["targets"]
                 for series in _SERIES.findall(target["expr"])}
        self.assertGreater(len(asked), 10)
        self.assertEqual(set(), asked - exported)
        self.assertIn("baremetal_alloc_nodes", families)  # the fleet's
