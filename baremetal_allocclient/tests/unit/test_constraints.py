"""The shared constraint model and funnel (pure), table-driven."""

from __future__ import annotations

from typing import Any

import testtools

from baremetal_allocclient import constraints as model
from baremetal_allocclient.constraints import Constraints, Op, Selection


def _node(**fields: Any) -> dict[str, Any]:
    node: dict[str, Any] = {
        "uuid": "u", "name": "n", "resource_class": "rc",
        "provision_state": "available", "maintenance": False,
        "power_state": "power off", "instance_uuid": None, "traits": [],
        "properties": {}, "conductor_group": "", "owner": None,
        "lessee": None}
    node.update(fields)
    return node


class ValueTests(testtools.TestCase):
    def test_numbers(self) -> None:
        for value, expected in ((8, 8.0), ("16", 16.0), (" 4.5 ", 4.5),
                                (True, None), ("many", None), (None, None),
                                ("nan", None), ("inf", None), ([1], None)):
            self.assertEqual(expected, model.as_number(value), value)

    def test_texts(self) -> None:
        for value, expected in (("x86_64", "x86_64"), (8, "8"), (8.0, "8"),
                                (2.5, "2.5"), (True, "true"),
                                ({"b": 1, "a": [2]}, '{"a":[2],"b":1}'),
                                (None, None)):
            self.assertEqual(expected, model.as_text(value), value)


class PropertyTests(testtools.TestCase):
    def test_matches(self) -> None:
        cases = (
            (("cpus", "min", 8), {"cpus": 8}, True),
            (("cpus", "min", 8), {"cpus": "16"}, True),
            (("cpus", "min", 8), {"cpus": 7.9}, False),
            (("cpus", "min", 8), {"cpus": "many"}, False),
            (("cpus", "min", 8), {}, False),
            (("cpus", "eq", 16), {"cpus": "16.0"}, True),
            (("cpus", "eq", "16"), {"cpus": 16}, True),
            (("arch", "eq", "x86_64"), {"arch": "X86_64"}, False),
            (("fast", "eq", "true"), {"fast": True}, True),
        )
        for (key, op, value), props, expected in cases:
            constraint = model.property_constraint(key, op, value)
            self.assertEqual(expected, constraint.matches(props),
                             (key, op, value, props))

    def test_bad_constraints_are_refused(self) -> None:
        for key, op, value in (("", "min", 1), ("k" * 256, "eq", "x"),
                               ("cpus", "min", "eight"),
                               ("cpus", "eq", {"a": 1})):
            self.assertRaises(model.ConstraintError,
                              model.property_constraint, key, op, value)


class WireTests(testtools.TestCase):
    def test_round_trip(self) -> None:
        wanted = Constraints(
            forbidden_traits=("CUSTOM_X",),
            properties=(model.property_constraint("cpus", Op.MIN, 8),
                        model.property_constraint("arch", Op.EQ, "arm")),
            conductor_group="g1", shard="s", node_owner="o",
            node_lessee="l", node_name="n", require_node_name=True)
        wire = wanted.to_wire()
        self.assertEqual({"key": "cpus", "min": 8}, wire["properties"][0])
        self.assertEqual(wanted, model.from_wire(wire))

    def test_group_is_lowered_and_require_needs_a_name(self) -> None:
        self.assertEqual("g1", model.from_wire(
            {"conductor_group": "G1"}).conductor_group)
        self.assertRaises(model.ConstraintError, model.from_wire,
                          {"require_node_name": True})


class FunnelTests(testtools.TestCase):
    def test_step_order_and_first_empty(self) -> None:
        selection = Selection(
            "rc", traits=("CUSTOM_A",), candidate_nodes=("n1",),
            owner="p", constraints=Constraints(
                forbidden_traits=("CUSTOM_B",), conductor_group="g",
                shard="s", node_owner="p", node_lessee="q",
                node_name="n1", require_node_name=True,
                properties=(model.property_constraint("cpus", Op.MIN, 2),)))
        names = [s.name(selection) for s in model.steps(selection)]
        self.assertEqual([
            "resource_class", "available", "not_in_maintenance",
            "power_state", "unreserved", "owner", "candidate_nodes",
            "traits", "node_owner", "node_lessee", "forbidden_traits",
            "property:cpus>=2", "conductor_group", "shard", "node_name",
        ], names)

    def test_counts(self) -> None:
        nodes = [
            _node(name="a", traits=["CUSTOM_A"]),
            _node(name="b", traits=["CUSTOM_A", "CUSTOM_B"]),
            _node(name="c", maintenance=True),
            _node(name="d", provision_state="active"),
            _node(name="e", resource_class="other"),
        ]
        selection = Selection("rc", traits=("CUSTOM_A",), constraints=(
            Constraints(forbidden_traits=("CUSTOM_B",))))
        funnel, survivors = model.funnel(selection, nodes)
        self.assertEqual((("resource_class", 4), ("available", 3),
                          ("not_in_maintenance", 2), ("power_state", 2),
                          ("unreserved", 2), ("traits", 2),
                          ("forbidden_traits", 1)), funnel.counts)
        self.assertEqual(["a"], [n["name"] for n in survivors])
        self.assertIsNone(funnel.first_empty)
        empty = model.funnel(Selection("none"), nodes)[0]
        self.assertEqual("resource_class", empty.first_empty)
        self.assertEqual(
            "resource_class 0 > available 0 > not_in_maintenance 0 > "
            "power_state 0 > unreserved 0 (emptied by resource_class)",
            empty.one_line())

    def test_preferred_first(self) -> None:
        nodes = [_node(name="a"), _node(name="b"), _node(name="c")]
        self.assertEqual(["b", "a", "c"], [
            n["name"] for n in model.preferred_first(nodes, "b")])
        self.assertEqual(["a", "b", "c"], [
            n["name"] for n in model.preferred_first(nodes, None)])


class NewOperatorTests(testtools.TestCase):
    """max, in, not_in, exists, not_exists and any_traits."""

    def test_matches(self) -> None:
        cases = (
            (("cpus", "max", 8), {"cpus": "8"}, True),
            (("cpus", "max", 8), {"cpus": 8.5}, False),
            (("cpus", "max", 8), {"cpus": "many"}, False),
            (("cpus", "max", 8), {}, False),
            (("rack", "in", ["r1", "r2"]), {"rack": "r2"}, True),
            (("rack", "in", ["r1", "r2"]), {"rack": "R2"}, False),
            (("rack", "in", ["r1"]), {}, False),
            (("cpus", "in", [4, "16"]), {"cpus": "16.0"}, True),
            (("fast", "in", ["true"]), {"fast": True}, True),
            (("rack", "not_in", ["r1"]), {"rack": "r2"}, True),
            (("rack", "not_in", ["r1"]), {"rack": "r1"}, False),
            (("rack", "not_in", ["r1"]), {}, True),
            (("rack", "not_in", ["r1"]), {"rack": None}, True),
            (("cpus", "not_in", [8]), {"cpus": "8.0"}, False),
            (("gpu", "exists", True), {"gpu": None}, True),
            (("gpu", "exists", True), {}, False),
            (("gpu", "not_exists", True), {}, True),
            (("gpu", "not_exists", True), {"gpu": 0}, False),
        )
        for (key, op, value), props, expected in cases:
            constraint = model.property_constraint(key, op, value)
            self.assertEqual(expected, constraint.matches(props),
                             (key, op, value, props))

    def test_labels_and_wire(self) -> None:
        cases = (
            (("cpus", "max", 8.0), "cpus<=8", {"key": "cpus", "max": 8}),
            (("rack", "in", ["r1", "r2", "r1"]), "rack in (r1,r2)",
             {"key": "rack", "in": ["r1", "r2"]}),
            (("rack", "not_in", [1]), "rack not in (1)",
             {"key": "rack", "not_in": ["1"]}),
            (("gpu", "exists", True), "gpu exists",
             {"key": "gpu", "exists": True}),
            (("gpu", "not_exists", True), "gpu not exists",
             {"key": "gpu", "not_exists": True}),
        )
        for args, label, wire in cases:
            constraint = model.property_constraint(*args)
            self.assertEqual(label, constraint.label)
            self.assertEqual(wire, constraint.to_wire())
            self.assertEqual(
                Constraints(properties=(constraint,)),
                model.from_wire({"properties": [wire]}))

    def test_bad_values_are_refused(self) -> None:
        for key, op, value in (("cpus", "max", "eight"),
                               ("rack", "in", []), ("rack", "in", "r1"),
                               ("rack", "in", [["r1"]]),
                               ("rack", "not_in", ["r"] * 51),
                               ("gpu", "exists", False),
                               ("gpu", "not_exists", "yes"),
                               ("gpu", "between", 1)):
            self.assertRaises(model.ConstraintError,
                              model.property_constraint, key, op, value)

    def test_each_operator_is_its_own_step_and_wording(self) -> None:
        props = tuple(model.property_constraint(*args) for args in (
            ("cpus", "max", 8), ("rack", "in", ["r1"]),
            ("rack", "not_in", ["r2"]), ("gpu", "exists", True),
            ("gpu", "not_exists", True)))
        selection = Selection("rc", constraints=Constraints(
            any_traits=("CUSTOM_A", "CUSTOM_B"), properties=props))
        nodes = [_node(name="a", traits=["CUSTOM_A"],
                       properties={"cpus": 4, "rack": "r1"})]
        funnel, survivors = model.funnel(selection, nodes)
        self.assertEqual([
            ("any_traits", 1), ("property:cpus<=8", 1),
            ("property:rack in (r1)", 1), ("property:rack not in (r2)", 1),
            ("property:gpu exists", 0), ("property:gpu not exists", 0),
        ], list(funnel.counts[5:]))
        self.assertEqual([], survivors)
        emptied = model.empty_step(selection, funnel)
        assert emptied is not None
        self.assertEqual(
            "no suitable nodes match the constraint property gpu exists",
            model.reason(selection, emptied))
        any_step = model.steps(selection)[5]
        self.assertEqual(
            "no suitable nodes match the constraint any_traits "
            "CUSTOM_A, CUSTOM_B", model.reason(selection, any_step))


class BestFitTests(testtools.TestCase):
    def test_excess_and_order(self) -> None:
        wanted = Constraints(
            properties=(model.property_constraint("cpus", Op.MIN, 4),
                        model.property_constraint("memory_mb", Op.MIN,
                                                  8192)),
            order=model.Order.BEST_FIT)
        terms = model.fit_terms(wanted)
        self.assertEqual((("cpus", 4.0), ("memory_mb", 8192.0)), terms)
        self.assertEqual(1.5, model.excess(
            terms, {"cpus": "8", "memory_mb": 12288}))
        nodes = [_node(uuid="u3", properties={"cpus": 64,
                                              "memory_mb": 8192}),
                 _node(uuid="u2", properties={"cpus": 4, "memory_mb": 16384}),
                 _node(uuid="u1", properties={"cpus": 8, "memory_mb": 8192})]
        self.assertEqual(["u1", "u2", "u3"], [
            n["uuid"] for n in model.best_fit(wanted, nodes)])

    def test_without_minimums_the_smallest_node_first(self) -> None:
        wanted = Constraints(order=model.Order.BEST_FIT)
        self.assertEqual(model.DEFAULT_FIT_KEYS,
                         tuple(k for k, _f in model.fit_terms(wanted)))
        nodes = [_node(uuid="b", properties={"cpus": 64}),
                 _node(uuid="a", properties={"cpus": "many"}),
                 _node(uuid="c", properties={"cpus": 4})]
        self.assertEqual(["a", "c", "b"], [
            n["uuid"] for n in model.best_fit(wanted, nodes)])

    def test_order_on_the_wire_and_in_explain(self) -> None:
        wanted = Constraints(order=model.Order.BEST_FIT)
        self.assertEqual({"order": "best_fit"}, wanted.to_wire())
        self.assertEqual(wanted, model.from_wire({"order": "best_fit"}))
        self.assertRaises(model.ConstraintError, model.from_wire,
                          {"order": "worst_fit"})
        self.assertEqual({"order": "first_fit"}, model.order_document(
            model.Order.FIRST_FIT, wanted, [("n1", 0.0)]))
        self.assertEqual(
            {"order": "best_fit", "measured": ["cpus", "memory_mb",
                                               "local_gb"],
             "first": [{"node": "n1", "excess": 0.5}]},
            model.order_document(model.Order.BEST_FIT, wanted,
                                 [("n1", 0.5)]))


class AlternativesTests(testtools.TestCase):
    def test_any_of_one_step(self) -> None:
        prop = model.property_constraint
        wanted = Constraints(any_of=(
            (prop("cpus", Op.MIN, 64),),
            (prop("gpu", Op.EXISTS), prop("cpus", Op.MAX, 8))))
        self.assertEqual(wanted, model.from_wire(wanted.to_wire()))
        self.assertEqual({"any_of": [[{"key": "cpus", "min": 64}],
                                     [{"key": "gpu", "exists": True},
                                      {"key": "cpus", "max": 8}]]},
                         wanted.to_wire())
        nodes = [_node(name="big", properties={"cpus": 64}),
                 _node(name="gpu", properties={"cpus": 8, "gpu": 1}),
                 _node(name="mid", properties={"cpus": 16, "gpu": 1}),
                 _node(name="small", properties={"cpus": 4})]
        selection = Selection("rc", constraints=wanted)
        funnel, survivors = model.funnel(selection, nodes)
        self.assertEqual(("any_of", 2), funnel.counts[-1])
        self.assertEqual(["big", "gpu"], [n["name"] for n in survivors])
        step = model.steps(selection)[-1]
        self.assertEqual(
            "no suitable nodes match the constraint any_of cpus>=64 | "
            "gpu exists, cpus<=8", model.reason(selection, step))
        self.assertRaises(model.ConstraintError, model.from_wire,
                          {"any_of": [[]]})
