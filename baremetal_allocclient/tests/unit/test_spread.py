"""Spreading a group over failure domains (pure)."""

from __future__ import annotations

from typing import Any

import testtools

from baremetal_allocclient import spread as model
from baremetal_allocclient.spread import Spread


def _nodes(*racks: str | None) -> list[dict[str, Any]]:
    return [{"uuid": f"n{i}", "properties": {} if rack is None
             else {"rack": rack}, "conductor_group": "G1", "shard": None}
            for i, rack in enumerate(racks)]


class SpreadTests(testtools.TestCase):
    def test_domains(self) -> None:
        node = {"properties": {"rack": 7}, "conductor_group": "G1",
                "shard": None}
        self.assertEqual("7", Spread("property:rack").domain_of(node))
        self.assertEqual("g1", Spread("conductor_group").domain_of(node))
        self.assertIsNone(Spread("shard").domain_of(node))
        self.assertIsNone(Spread("property:row").domain_of(node))

    def test_one_per_rack_round_robin_fullest_first(self) -> None:
        rack = Spread("property:rack").domain_of
        nodes = _nodes("r1", "r2", "r2", "r3", "r3", "r3", None)
        placed = model.choose(Spread("property:rack"), 3, nodes, rack)
        self.assertTrue(placed.placed)
        self.assertEqual(["n3", "n1", "n0"],
                         [n["uuid"] for n in placed.chosen])
        self.assertEqual({"r3": 1, "r2": 1, "r1": 1}, placed.members)
        self.assertEqual(1, placed.undomained)

    def test_two_per_rack_and_min_domains(self) -> None:
        rack = Spread("property:rack").domain_of
        nodes = _nodes("r1", "r1", "r1", "r2")
        two = Spread("property:rack", max_per_domain=2)
        self.assertEqual({"r1": 2, "r2": 1},
                         model.choose(two, 3, nodes, rack).members)
        wide = Spread("property:rack", max_per_domain=3, min_domains=3)
        refused = model.choose(wide, 3, nodes, rack, known=["r3", "r1"])
        self.assertFalse(refused.placed)
        self.assertEqual((), refused.chosen)
        self.assertEqual({"r1": 3, "r2": 1, "r3": 0}, refused.free)

    def test_refusal_names_the_short_domains(self) -> None:
        rack = Spread("property:rack").domain_of
        refused = model.choose(Spread("property:rack"), 3,
                               _nodes("r1", "r1", "r2", None), rack,
                               known=["r1", "r2", "r3"])
        self.assertEqual(
            "spread over rack cannot place 3 members, at most 1 per rack: "
            "2 placeable (r1 2 free, r2 1 free, r3 0 free; 1 matching "
            "nodes have no rack); ran short: r3", refused.reason())

    def test_wire_and_bad_spreads(self) -> None:
        wanted = Spread("shard", 2, 3)
        self.assertEqual({"over": "shard", "max_per_domain": 2,
                          "min_domains": 3}, wanted.to_wire())
        self.assertEqual(wanted, model.from_wire(wanted.to_wire()))
        self.assertIsNone(model.from_wire(None))
        for body in ({"over": "rack"}, {"over": "property:"},
                     {"over": "shard", "max_per_domain": 0},
                     {"over": "shard", "min_domains": True},
                     {"over": "shard", "extra": 1}, {}, []):
            self.assertRaises(model.SpreadError, model.from_wire, body)
        self.assertRaises(model.SpreadError, Spread("shard", 1, 4).check, 3)
