"""Table tests for the pure conductor decisions."""

from __future__ import annotations

import datetime

import testtools

from baremetal_allocclient.server.allocation.liveness import (
    ConductorState,
    is_dead,
    orphaned_affinities,
    takeover_plan,
)

NOW = datetime.datetime(2026, 11, 21, 12, 0, 0)
TIMEOUT = datetime.timedelta(seconds=60)


def _c(name: str, age: float, online: bool = True) -> ConductorState:
    return ConductorState(name, online, NOW - datetime.timedelta(seconds=age))


class IsDeadTests(testtools.TestCase):
    def test_table(self) -> None:
        cases = [
            # (conductor, dead?)
            (_c("a", 0), False),
            (_c("a", 59.9), False),
            (_c("a", 60), False),      # exactly the timeout: still alive
            (_c("a", 60.001), True),
            (_c("a", 3600), True),
            (_c("a", 0, online=False), True),   # graceful stop
            (_c("a", -5), False),      # heartbeat "in the future"
        ]
        for conductor, dead in cases:
            self.assertEqual(dead, is_dead(conductor, NOW, TIMEOUT),
                             conductor)


class OrphanedAffinitiesTests(testtools.TestCase):
    def test_table(self) -> None:
        cases: list[tuple[list[str | None], list[ConductorState],
                          list[str | None]]] = [
            # nothing allocating
            ([], [_c("me", 0), _c("b", 999)], []),
            # a live other conductor keeps its rows
            (["b"], [_c("me", 0), _c("b", 1)], []),
            # a stale heartbeat, an offline one, and a never-registered one
            (["b", "c", "ghost"],
             [_c("me", 0), _c("b", 61), _c("c", 0, online=False)],
             ["b", "c", "ghost"]),
            # rows without any affinity are orphaned, listed first
            (["b", None], [_c("b", 999)], [None, "b"]),
            # never myself, even when my own heartbeat lags badly ...
            (["me"], [_c("me", 9999)], []),
            # ... or I am marked offline, or not registered at all
            (["me"], [_c("me", 0, online=False)], []),
            (["me"], [], []),
        ]
        for affinities, conductors, expected in cases:
            self.assertEqual(
                expected,
                orphaned_affinities(affinities, conductors, NOW, TIMEOUT,
                                    "me"),
                (affinities, conductors),
            )


class TakeoverPlanTests(testtools.TestCase):
    def test_table(self) -> None:
        cases: list[tuple[dict[str | None, int], int,
                          list[tuple[str | None, int]]]] = [
            ({}, 10, []),
            ({"b": 5}, 10, [("b", 5)]),
            ({"b": 5}, 3, [("b", 3)]),          # never more than free slots
            ({"b": 5}, 0, []),                  # full pool: claim nothing
            ({"b": 5}, -1, []),
            ({"c": 4, "b": 4, None: 1}, 6, [(None, 1), ("b", 4), ("c", 1)]),
            ({"b": 0, "c": 2}, 5, [("c", 2)]),
        ]
        for orphans, free, expected in cases:
            self.assertEqual(expected, takeover_plan(orphans, free),
                             (orphans, free))

