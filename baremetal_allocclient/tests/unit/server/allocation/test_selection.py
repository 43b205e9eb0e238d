"""Selection decisions: filter order, wording, candidate order."""

from __future__ import annotations

import random

import testtools

from baremetal_allocclient import constraints as model
from baremetal_allocclient.server.allocation import selection as sel
from baremetal_allocclient.server.allocation.selection import Filter, Request


class ActiveFiltersTests(testtools.TestCase):
    def test_table(self) -> None:
        cases = [
            (Request("rc"), [Filter.RESOURCE_CLASS]),
            (Request("rc", traits=("CUSTOM_A",)),
             [Filter.RESOURCE_CLASS, Filter.TRAITS]),
            (Request("rc", candidate_nodes=("u",), owner="p",
                     traits=("CUSTOM_A",)),
             [Filter.RESOURCE_CLASS, Filter.OWNER, Filter.CANDIDATES,
              Filter.TRAITS]),
            (Request("rc", owner="p"), [Filter.RESOURCE_CLASS,
                                        Filter.OWNER]),
        ]
        for request, expected in cases:
            self.assertEqual(expected, sel.active_filters(request))


class ExplainFailureTests(testtools.TestCase):
    """The step that emptied the funnel, in Ironic's words; the funnel
    follows for clients that opted in."""

    def test_table(self) -> None:
        full = Request("gold", candidate_nodes=("u",), owner="p",
                       traits=("CUSTOM_B", "CUSTOM_A"))
        query = ("none of the requested nodes are available and match "
                 "the resource class gold")
        traits = "no suitable nodes have the requested traits " \
                 "CUSTOM_B, CUSTOM_A"
        cases = [
            (full, [0] * 8, query),
            (full, [3] * 5 + [0, 0, 0], query),  # owner: Ironic's query
            (full, [3] * 5 + [1, 0, 0], query),
            (full, [3] * 5 + [1, 1, 0], traits),
            (full, [3] * 5 + [1, 1, 1], "could not reserve any of 2 "
             "suitable nodes"),
            (Request("gold", owner="p"), [2] * 5 + [0],
             "no available nodes match the resource class gold"),
        ]
        for request, counts, ironic in cases:
            funnel = model.funnel_from_counts(request.selection, counts)
            why = sel.explain_failure(request, funnel, 2)
            self.assertEqual(ironic, why.ironic)
            self.assertEqual(f"{ironic}; funnel: {funnel.one_line()}",
                             why.extended)

    def test_counts_must_match_steps(self) -> None:
        self.assertRaises(ValueError, model.funnel_from_counts,
                          Request("rc").selection, [1, 2])


class MessageTests(testtools.TestCase):
    def test_reservation_failure(self) -> None:
        self.assertEqual("could not reserve any of 3 suitable nodes",
                         sel.reservation_failure(3))
        self.assertEqual("all nodes were filtered out during reservation",
                         sel.reservation_failure(0))

    def test_failure_message(self) -> None:
        self.assertEqual("Failed to process allocation u: why.",
                         sel.failure_message("u", "why"))


class OrderTests(testtools.TestCase):
    def test_named_node_first_rest_shuffled(self) -> None:
        candidates = [sel.Candidate(i, f"node-{i}", f"uuid-{i}")
                      for i in range(10)]
        orders = set()
        for seed in range(20):
            order = [c.id for c in sel.order_candidates(
                candidates, "node-7", random.Random(seed))]
            self.assertEqual(7, order[0])
            self.assertEqual(sorted(order), list(range(10)))
            orders.add(tuple(order))
        self.assertGreater(len(orders), 1)

    def test_no_name_match_is_a_plain_shuffle(self) -> None:
        candidates = [sel.Candidate(1, None, "u1"),
                      sel.Candidate(2, "a", "u2"),
                      sel.Candidate(3, "b", "u3")]
        rng = random.Random(42)
        expected = list(candidates)
        random.Random(42).shuffle(expected)
        self.assertEqual(expected,
                         sel.order_candidates(candidates, "zzz", rng))
        self.assertEqual([], sel.order_candidates([], "x", rng))


class ConstraintFilterTests(testtools.TestCase):
    """The extension's filters follow the shared funnel order and say
    which SQL variant a property constraint needs."""

    def test_filters_variants_and_wording(self) -> None:
        wanted = model.Constraints(
            forbidden_traits=("CUSTOM_X",), shard="s1", node_owner="p",
            properties=(model.property_constraint("cpus", "min", 8),
                        model.property_constraint("cpus", "eq", "16"),
                        model.property_constraint("arch", "eq", "arm")))
        request = sel.Request("gold", traits=("CUSTOM_A",),
                                    constraints=wanted)
        filters = sel.active_filters(request)
        self.assertEqual(
            [sel.Filter.RESOURCE_CLASS, sel.Filter.TRAITS,
             ("node_owner", 0, ""), ("forbidden_traits", 0, ""),
             ("property", 0, "min"), ("property", 1, "eq_number"),
             ("property", 2, "eq_text"), ("shard", 0, "")],
            [f if isinstance(f, sel.Filter)
             else (f.kind.value, f.position, f.variant) for f in filters])
        reasons = [model.reason(request.selection, step)
                   for step in sel.funnel_steps(request)[6:]]
        self.assertEqual([
            "no suitable nodes match the constraint node_owner p",
            "no suitable nodes match the constraint forbidden_traits "
            "CUSTOM_X",
            "no suitable nodes match the constraint property cpus>=8",
            "no suitable nodes match the constraint property cpus=16",
            "no suitable nodes match the constraint property arch=arm",
            "no suitable nodes match the constraint shard s1",
        ], reasons)
        self.assertEqual("p", sel.Request(
            "gold", name="n", constraints=model.Constraints(
                node_name="p")).preferred_name)
        self.assertEqual("n", sel.Request("gold", name="n")
                         .preferred_name)


class LazyOrderTests(testtools.TestCase):
    def test_named_node_first_rest_in_random_order(self) -> None:
        candidates = [sel.Candidate(i, f"node-{i}", f"uuid-{i}")
                      for i in range(10)]
        orders = set()
        for seed in range(20):
            rng = random.Random(seed)
            order = [c.id for c in sel.candidate_order(
                candidates, "node-7", rng.randrange)]
            self.assertEqual(7, order[0])
            self.assertEqual(sorted(order), list(range(10)))
            orders.add(tuple(order))
        self.assertGreater(len(orders), 1)

    def test_draws_only_for_the_nodes_asked_for(self) -> None:
        candidates = [sel.Candidate(i, None, f"uuid-{i}") for i in range(32)]
        draws: list[int] = []

        def draw(below: int) -> int:
            draws.append(below)
            return below - 1

        order = sel.candidate_order(candidates, None, draw)
        self.assertEqual(31, next(order).id)
        self.assertEqual([32], draws)
        self.assertEqual(30, next(order).id)
        self.assertEqual([32, 31], draws)

    def test_no_name_match_and_no_candidates(self) -> None:
        candidates = [sel.Candidate(1, None, "u1"),
                      sel.Candidate(2, "a", "u2")]
        order = list(sel.candidate_order(candidates, "zzz",
                                         random.Random(3).randrange))
        self.assertEqual({1, 2}, {c.id for c in order})
        self.assertEqual(2, len(order))
        self.assertEqual([], list(sel.candidate_order([], "x", min)))
