"""Constraint options of create/explain/capacity (pure parsing)."""

from __future__ import annotations

import argparse

import testtools

from baremetal_allocclient.constraints import Constraints, Op, Order
from baremetal_allocclient.osc.v1 import explain
from baremetal_allocclient.osc.v1.constraint_options import (
    add_constraint_options,
    constraints_from_args,
)


class _Exit(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _Exit(message)


def _parse(*argv: str) -> Constraints:
    parser = _Parser()
    add_constraint_options(parser)
    return constraints_from_args(parser, parser.parse_args(list(argv)))


class OptionTests(testtools.TestCase):
    def test_nothing_given_is_no_constraint(self) -> None:
        self.assertFalse(_parse())

    def test_every_option(self) -> None:
        got = _parse("--forbid-trait", "CUSTOM_X", "--min-property",
                     "disks=2", "--property", "rack=r1", "--min-cpus", "8",
                     "--min-memory-mb", "1024", "--min-local-gb", "10",
                     "--cpu-arch", "x86_64", "--conductor-group", "G1",
                     "--shard", "s1", "--node-owner", "o", "--node-lessee",
                     "l", "--require-node", "n1")
        self.assertEqual(("CUSTOM_X",), got.forbidden_traits)
        self.assertEqual(
            ["disks>=2", "rack=r1", "cpus>=8", "memory_mb>=1024",
             "local_gb>=10", "cpu_arch=x86_64"],
            [p.label for p in got.properties])
        self.assertEqual(Op.MIN, got.properties[0].op)
        self.assertEqual(("g1", "s1", "o", "l", "n1", True), (
            got.conductor_group, got.shard, got.node_owner,
            got.node_lessee, got.node_name, got.require_node_name))

    def test_new_operators(self) -> None:
        got = _parse("--any-trait", "CUSTOM_A", "--any-trait", "CUSTOM_B",
                     "--max-property", "cpus=8", "--property-in",
                     "rack=r1, r2", "--property-not-in", "rack=r3",
                     "--property-exists", "gpu", "--property-not-exists",
                     "broken", "--min-cpus", "2")
        self.assertEqual(("CUSTOM_A", "CUSTOM_B"), got.any_traits)
        self.assertEqual(
            ["cpus<=8", "rack in (r1,r2)", "rack not in (r3)", "gpu exists",
             "broken not exists", "cpus>=2"],
            [p.label for p in got.properties])
        self.assertIsNone(got.order)
        two = _parse("--any-of", '[{"key": "cpus", "min": 64}]',
                     "--any-of", '[{"key": "gpu", "exists": true}, '
                     '{"key": "rack", "in": ["r1"]}]')
        self.assertEqual([["cpus>=64"], ["gpu exists", "rack in (r1)"]],
                         [[p.label for p in terms] for terms in two.any_of])
        for bad in ("[]", "{}", "nope", '[{"key": "cpus", "min": "x"}]',
                    '[{"key": "cpus"}]'):
            self.assertRaises((_Exit, SystemExit), _parse, "--any-of", bad)
        self.assertEqual(Order.BEST_FIT,
                         _parse("--order", "best_fit").order)
        for argv in (("--max-property", "cpus=few"), ("--order", "worst"),
                     ("--property-in", "rack="),
                     ("--property-in", "rack=a,,b"),
                     ("--property-exists", " ")):
            self.assertRaises((_Exit, SystemExit), _parse, *argv)

    def test_prefer_is_not_require(self) -> None:
        got = _parse("--prefer-node", "n1")
        self.assertEqual(("n1", False), (got.node_name,
                                         got.require_node_name))

    def test_usage_errors(self) -> None:
        for argv in (("--min-property", "cpus=eight"),
                     ("--min-cpus", "x"),
                     ("--prefer-node", "a", "--require-node", "b"),
                     ("--min-property", "=3"),
                     ("--property", "k" * 300 + "=1")):
            self.assertRaises((_Exit, SystemExit), _parse, *argv)

    def test_funnel_rows_mark_the_first_empty_step(self) -> None:
        doc = {"funnel": [{"step": "resource_class", "count": 2},
                          {"step": "shard", "count": 0}],
               "first_empty": "shard"}
        self.assertEqual([("resource_class", 2, False), ("shard", 0, True)],
                         explain.funnel_rows(doc))
