"""The fleet's figures as Prometheus gauges, read from the database on
a scrape and kept for :data:`STALENESS` seconds, so they are the same
whichever ``serve`` process is scraped and several scrapes a second
cost one read.  At most :data:`MAX_CLASSES` resource classes are named
(those with the most nodes); the others add up under ``other``.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from baremetal_allocclient.server.allocation.service import fleet
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import utcnow
from baremetal_allocclient.server.metrics.instruments import PREFIX

#: Longest a scrape's fleet figures may be old, in seconds.
STALENESS = 5.0
#: Resource classes named in the figures; the rest are ``other``.
MAX_CLASSES = 20
OTHER = "other"
NONE = "none"  # nodes without a resource class


def classes_named(node_counts: dict[tuple[str | None, str], int]
                  ) -> Callable[[str | None], str]:
    """How a resource class is labelled: its name for the
    :data:`MAX_CLASSES` with the most nodes, else :data:`OTHER` (pure)."""
    totals: Counter[str | None] = Counter()
    for (rc, _state), count in node_counts.items():
        totals[rc] += count
    named = {rc for rc, _n in sorted(
        totals.items(), key=lambda item: (-item[1], str(item[0])))[
            :MAX_CLASSES]}

    def label(rc: str | None) -> str:
        if rc is None:
            return NONE
        return rc if rc in named else OTHER
    return label


class FleetCollector(Collector):
    """The gauges of :func:`fleet.figures`, cached for STALENESS s."""

    def __init__(self, db: Database, staleness: float = STALENESS) -> None:
        self._db = db
        self._staleness = staleness
        self._lock = threading.Lock()
        self._kept: tuple[float, fleet.Figures] | None = None

    def _figures(self) -> fleet.Figures:
        with self._lock:
            now = time.monotonic()
            if self._kept is None or now - self._kept[0] > self._staleness:
                self._kept = (now, fleet.figures(self._db, utcnow()))
            return self._kept[1]

    def describe(self) -> Iterator[Any]:
        return iter(())  # read only on a scrape, never at registration

    def collect(self) -> Iterator[Any]:
        figures = self._figures()
        label = classes_named(figures.nodes)
        nodes = GaugeMetricFamily(
            f"{PREFIX}_nodes", "Nodes by resource class and state "
            "(maintenance, allocated, available, other)",
            labels=("resource_class", "state"))
        summed: Counter[tuple[str, str]] = Counter()
        for (rc, state), count in figures.nodes.items():
            summed[(label(rc), state)] += count
        for (rc, state), count in sorted(summed.items()):
            nodes.add_metric((rc, state), count)
        yield nodes
        allocations = GaugeMetricFamily(
            f"{PREFIX}_allocations", "Allocations by state",
            labels=("state",))
        for state, count in sorted(figures.allocations.items()):
            allocations.add_metric((state,), count)
        yield allocations
        depth = GaugeMetricFamily(
            f"{PREFIX}_line_depth", "Allocations waiting in line, by "
            "resource class", labels=("resource_class",))
        oldest = GaugeMetricFamily(
            f"{PREFIX}_line_oldest_seconds", "Age of the oldest allocation "
            "waiting in line, by resource class",
            labels=("resource_class",))
        ages: dict[str, float] = {}
        waiting: Counter[str] = Counter()
        for rc, (count, first) in figures.line.items():
            name = label(rc)
            waiting[name] += count
            age = max(0.0, (figures.read_at - first).total_seconds())
            ages[name] = max(ages.get(name, 0.0), age)
        for name in sorted(waiting):
            depth.add_metric((name,), waiting[name])
            oldest.add_metric((name,), ages[name])
        yield depth
        yield oldest
        read = GaugeMetricFamily(
            f"{PREFIX}_fleet_read_timestamp_seconds", "When the fleet's "
            "figures were read from the database (they are at most "
            f"{STALENESS:g} s old)")
        read.add_metric((), figures.read_at.replace(
            tzinfo=datetime.timezone.utc).timestamp())
        yield read
