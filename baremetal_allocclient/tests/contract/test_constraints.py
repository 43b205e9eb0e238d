"""Constraints beyond traits, and ``explain``, through the SDK on both
targets: the reference server evaluates them itself (its extension), real
Ironic through the SDK's client-side prefiltering.

One fleet per target, built so that every constraint selects a different
set of nodes.  "Selects exactly" is checked by allocating with the
constraint until nothing is left: the nodes taken must be exactly the
expected ones, and the next attempt must fail.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, ClassVar

from baremetal_allocclient import exceptions
from baremetal_allocclient.constraints import (
    Constraints,
    Op,
    Order,
    property_constraint,
)
from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.fixtures import preforked
from baremetal_allocclient.tests.fixtures.processes import clean_env
from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.v1.client import Client

_EXT = {"X-Baremetal-Alloc-Extensions": "constraints"}
#: Node a, b, c are allocatable; d is in maintenance (and would match
#: most constraints otherwise).
_FLEET: dict[str, dict[str, Any]] = {
    "a": {"properties": {"cpus": 8, "memory_mb": 16384, "local_gb": 100,
                         "cpu_arch": "x86_64"},
          "traits": ["CUSTOM_A"], "group": "G1", "shard": "s1",
          "owner": "p1"},
    "b": {"properties": {"cpus": "16", "memory_mb": 32768,
                         "cpu_arch": "aarch64"},
          "traits": ["CUSTOM_A", "CUSTOM_GPU"], "group": "g2",
          "shard": "s2", "lessee": "p2"},
    "c": {"properties": {"cpus": 4, "memory_mb": 8192, "cpu_arch": "x86_64",
                         "rack": "r1"},
          "traits": [], "group": "g1", "owner": "p2"},
    "d": {"properties": {"cpus": 32, "memory_mb": 65536,
                         "cpu_arch": "x86_64", "rack": "r1"},
          "traits": ["CUSTOM_GPU"], "shard": "s1", "maintenance": True},
}


_BIN = os.path.dirname(sys.executable)


def _prop(key: str, op: str, value: Any) -> Any:
    return property_constraint(key, Op(op), value)


class Constrained(base.ContractMixin):
    """Every constraint selects exactly its nodes; explain agrees."""

    rc: ClassVar[str]
    names: ClassVar[dict[str, str]]  # fleet letter -> node name

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.rc = targets.unique("rc")
        prefix = targets.unique("sel")
        letters = sorted(_FLEET)
        nodes = cls.target.make_nodes(
            len(letters), cls.rc, name_prefix=prefix,
            each=[{"properties": _FLEET[k]["properties"]} for k in letters])
        cls.names = {k: n["name"] for k, n in zip(letters, nodes,
                                                   strict=True)}
        for letter in letters:
            cls._configure(cls.names[letter], _FLEET[letter])

    @classmethod
    def _configure(cls, name: str, spec: dict[str, Any]) -> None:
        """Traits, owner/lessee, shard, maintenance, and the conductor
        group last (Ironic routes node updates by it)."""
        target = cls.target
        if spec["traits"]:
            target.expect(204, "PUT", f"/v1/nodes/{name}/traits",
                          {"traits": spec["traits"]})
        patch = [{"op": "add", "path": f"/{key}", "value": spec[key]}
                 for key in ("owner", "lessee") if key in spec]
        if "shard" in spec:
            patch.append({"op": "add", "path": "/shard",
                          "value": spec["shard"]})
        if patch:
            target.expect(200, "PATCH", f"/v1/nodes/{name}", patch,
                          headers=_EXT)
        if spec.get("maintenance"):
            target.expect(202, "PUT", f"/v1/nodes/{name}/maintenance",
                          {"reason": "test"})
        if "group" in spec and target.name == "reference":
            # Ironic refuses a group no conductor serves, and the
            # all-in-one Ironic target has one conductor, in group "".
            target.expect(200, "PATCH", f"/v1/nodes/{name}", [
                {"op": "add", "path": "/conductor_group",
                 "value": spec["group"]}])

    def setUp(self) -> None:
        super().setUp()
        self.client = Client.from_endpoint(self.target.endpoint)

    def assertSelects(self, expected: str, constraints: Constraints,
                      **kw: Any) -> None:
        """Allocating with ``constraints`` takes exactly the nodes
        ``expected`` (fleet letters), then fails."""
        taken: list[str] = []
        try:
            for _ in expected:
                allocation = self.client.allocate(
                    self.rc, constraints=constraints, timeout=60, **kw)
                taken.append(str(allocation.uuid))
            with self.assertRaises((exceptions.NoMatchingNodes,
                                    exceptions.AllocationFailed)):
                self.client.allocate(self.rc, constraints=constraints,
                                     timeout=60, **kw)
            nodes = {self.target.allocation(uuid)["node_uuid"]
                     for uuid in taken}
            names = {self.target.node(uuid)["name"] for uuid in nodes}
            self.assertEqual({self.names[k] for k in expected}, names)
        finally:
            for uuid in taken:
                self.client.delete_allocation(uuid, ignore_missing=True)

    def test_forbidden_traits(self) -> None:
        self.assertSelects("ac", Constraints(forbidden_traits=("CUSTOM_GPU",)))

    def test_numeric_minimum_counts_numeric_strings(self) -> None:
        self.assertSelects("ab", Constraints(
            properties=(_prop("cpus", "min", 8),)))

    def test_exact_string_value(self) -> None:
        self.assertSelects("ac", Constraints(
            properties=(_prop("cpu_arch", "eq", "x86_64"),)))

    def test_exact_number_matches_a_numeric_string(self) -> None:
        self.assertSelects("b", Constraints(
            properties=(_prop("cpus", "eq", 16),)))

    def test_three_property_constraints_and_any_key(self) -> None:
        self.assertSelects("c", Constraints(properties=(
            _prop("memory_mb", "min", 4096),
            _prop("cpu_arch", "eq", "x86_64"),
            _prop("rack", "eq", "r1"),
        )))

    def test_minimum_on_a_key_some_nodes_lack(self) -> None:
        self.assertSelects("a", Constraints(
            properties=(_prop("local_gb", "min", 50),)))

    def test_numeric_maximum(self) -> None:
        self.assertSelects("ac", Constraints(
            properties=(_prop("cpus", "max", 8),)))

    def test_value_in_a_set(self) -> None:
        self.assertSelects("b", Constraints(properties=(
            _prop("cpu_arch", "in", ["aarch64", "ppc64le"]),)))

    def test_value_not_in_a_set_counts_numeric_strings(self) -> None:
        self.assertSelects("c", Constraints(
            properties=(_prop("cpus", "not_in", [8, "16.0"]),)))

    def test_key_exists_and_not_exists(self) -> None:
        self.assertSelects("c", Constraints(
            properties=(_prop("rack", "exists", True),)))
        self.assertSelects("bc", Constraints(
            properties=(_prop("local_gb", "not_exists", True),)))

    def test_alternatives(self) -> None:
        """Any of several sets of terms: a (8 CPUs with local_gb) or c
        (in rack r1); one step in explain."""
        wanted = Constraints(any_of=(
            (_prop("cpus", "min", 8), _prop("local_gb", "exists", True)),
            (_prop("rack", "in", ["r1"]),)))
        self.assertSelects("ac", wanted)
        doc = self.client.explain(self.rc, constraints=wanted)
        self.assertEqual(("any_of", 2), (doc["funnel"][-1]["step"],
                                         doc["funnel"][-1]["count"]))

    def test_any_of_some_traits(self) -> None:
        self.assertSelects("b", Constraints(
            any_traits=("CUSTOM_GPU", "CUSTOM_B")))

    def test_explain_funnel_of_the_new_operators(self) -> None:
        """Each new operator is its own step, counted alike on both
        targets, and the first empty one is named."""
        wanted = Constraints(
            any_traits=("CUSTOM_A", "CUSTOM_B"),
            properties=(_prop("cpus", "max", 16),
                        _prop("cpu_arch", "in", ["x86_64", "aarch64"]),
                        _prop("rack", "not_in", ["r2"]),
                        _prop("local_gb", "not_exists", True),
                        _prop("memory_mb", "exists", True),
                        _prop("cpus", "not_in", ["16"])))
        doc = self.client.explain(self.rc, constraints=wanted)
        self.assertEqual([
            ("resource_class", 4), ("available", 4),
            ("not_in_maintenance", 3), ("power_state", 3),
            ("unreserved", 3), ("any_traits", 2),
            ("property:cpus<=16", 2),
            ("property:cpu_arch in (x86_64,aarch64)", 2),
            ("property:rack not in (r2)", 2),
            ("property:local_gb not exists", 1),
            ("property:memory_mb exists", 1),
            ("property:cpus not in (16)", 0),
        ], [(s["step"], s["count"]) for s in doc["funnel"]])
        self.assertEqual((0, "property:cpus not in (16)"),
                         (doc["candidates"], doc["first_empty"]))
        with self.assertRaises(exceptions.ClientError) as caught:
            self.client.allocate(self.rc, constraints=wanted, timeout=60)
        self.assertIn("property cpus not in (16)", str(caught.exception))

    def test_best_fit_takes_the_least_exceeding_node_first(self) -> None:
        """cpus>=4: c (4 CPUs), then a (8), then b (16); explain shows
        that order with each node's excess.  (Against Ironic the SDK
        names the allocation like the best node, which Ironic tries
        first.)"""
        wanted = Constraints(properties=(_prop("cpus", "min", 4),),
                             order=Order.BEST_FIT)
        doc = self.client.explain(self.rc, constraints=wanted)
        self.assertEqual({"order": "best_fit", "measured": ["cpus>=4"],
                          "first": [
                              {"node": self.names["c"], "excess": 0.0},
                              {"node": self.names["a"], "excess": 1.0},
                              {"node": self.names["b"], "excess": 3.0}]},
                         doc["order"])
        taken: list[str] = []
        try:
            for letter in "cab":
                allocation = self.client.allocate(
                    self.rc, constraints=wanted, timeout=60)
                taken.append(str(allocation.uuid))
                node = self.target.node(str(allocation.node_uuid))
                self.assertEqual(self.names[letter], node["name"])
        finally:
            for uuid in taken:
                self.client.delete_allocation(uuid, ignore_missing=True)

    def test_first_fit_is_said_in_explain(self) -> None:
        doc = self.client.explain(self.rc, constraints=Constraints(
            order=Order.FIRST_FIT))
        self.assertEqual({"order": "first_fit"}, doc["order"])

    def test_conductor_group_is_case_insensitive(self) -> None:
        if self.is_reference:
            self.assertSelects("ac", Constraints(conductor_group="G1"))
            return
        # The Ironic target cannot hold nodes in other groups (see
        # _configure): all are in "", none in g1.
        self.assertSelects("abc", Constraints(conductor_group=""))
        doc = self.client.explain(self.rc,
                                  constraints=Constraints(conductor_group="g1"))
        self.assertEqual("conductor_group", doc["first_empty"])

    def test_shard(self) -> None:
        self.assertSelects("a", Constraints(shard="s1"))

    def test_node_owner_and_node_lessee(self) -> None:
        self.assertSelects("c", Constraints(node_owner="p2"))
        self.assertSelects("b", Constraints(node_lessee="p2"))

    def test_allocation_owner_matches_owner_or_lessee(self) -> None:
        self.assertSelects("bc", Constraints(
            forbidden_traits=("CUSTOM_B",)), owner="p2")

    def test_required_node_name(self) -> None:
        self.assertSelects("b", Constraints(
            node_name=self.names["b"], require_node_name=True))

    def test_preferred_node_name_is_tried_first(self) -> None:
        wanted = Constraints(node_name=self.names["c"])
        allocation = self.client.allocate(self.rc, constraints=wanted,
                                          timeout=60)
        try:
            node = self.target.node(str(allocation.node_uuid))
            self.assertEqual(self.names["c"], node["name"])
        finally:
            self.client.delete_allocation(str(allocation.uuid))

    def test_nothing_matches_fails_naming_the_step(self) -> None:
        wanted = Constraints(node_owner="p1", shard="s2")
        with self.assertRaises(exceptions.ClientError) as caught:
            self.client.allocate(self.rc, constraints=wanted, timeout=60)
        self.assertIn("shard 0", str(caught.exception))
        self.assertEqual(
            [], list(self.client.list_allocations(resource_class=self.rc)))

    def test_explain_funnel(self) -> None:
        """The same funnel, step by step, on both targets."""
        wanted = Constraints(
            forbidden_traits=("CUSTOM_GPU",),
            properties=(_prop("cpus", "min", 4),),
            shard="s1")
        doc = self.client.explain(self.rc, traits=["CUSTOM_A"],
                                  constraints=wanted)
        self.assertEqual([
            {"step": "resource_class", "count": 4},
            {"step": "available", "count": 4},
            {"step": "not_in_maintenance", "count": 3},
            {"step": "power_state", "count": 3},
            {"step": "unreserved", "count": 3},
            {"step": "traits", "count": 2},
            {"step": "forbidden_traits", "count": 1},
            {"step": "property:cpus>=4", "count": 1},
            {"step": "shard", "count": 1},
        ], doc["funnel"])
        self.assertEqual((1, None), (doc["candidates"], doc["first_empty"]))

    def test_explain_names_the_first_empty_step(self) -> None:
        """Ironic's steps (candidates included) first, then the
        extension's."""
        doc = self.client.explain(
            self.rc, candidate_nodes=[self.names["a"], self.names["c"]],
            constraints=Constraints(shard="s2", node_owner="p1"))
        self.assertEqual([
            ("resource_class", 4), ("available", 4),
            ("not_in_maintenance", 3), ("power_state", 3),
            ("unreserved", 3), ("candidate_nodes", 2), ("node_owner", 1),
            ("shard", 0),
        ], [(s["step"], s["count"]) for s in doc["funnel"]])
        self.assertEqual((0, "shard"),
                         (doc["candidates"], doc["first_empty"]))

    def cli(self, program: str, *args: str) -> Any:
        """Run one of this project's programs against the target; JSON."""
        prefix = (["baremetal", "allocation"] if program == "openstack"
                  else [])
        proc = preforked.run(
            [os.path.join(_BIN, program), "--os-auth-type", "none",
             "--os-endpoint", self.target.endpoint, *prefix, *args,
             "-f", "json"],
            env=clean_env(), timeout=120)
        self.assertEqual(0, proc.returncode, proc.stderr)
        return json.loads(proc.stdout)

    def test_command_lines_take_the_new_operators(self) -> None:
        options = ("--resource-class", self.rc, "--any-trait", "CUSTOM_A",
                   "--any-trait", "CUSTOM_B", "--max-property", "cpus=16",
                   "--property-in", "cpu_arch=x86_64,aarch64",
                   "--property-not-in", "rack=r2", "--property-exists",
                   "memory_mb", "--property-not-exists", "local_gb")
        expected = [
            ["resource_class", 4], ["available", 4],
            ["not_in_maintenance", 3], ["power_state", 3],
            ["unreserved", 3], ["any_traits", 2], ["property:cpus<=16", 2],
            ["property:cpu_arch in (x86_64,aarch64)", 2],
            ["property:rack not in (r2)", 2],
            ["property:memory_mb exists", 2],
            ["property:local_gb not exists", 1]]
        for program in ("baremetal-alloc", "openstack"):
            rows = self.cli(program, "explain", *options)
            self.assertEqual(expected,
                             [[r["Step"], r["Count"]] for r in rows])

    def test_both_command_lines(self) -> None:
        """explain -f json gives the same rows in both programs and on
        both targets; create takes the same constraint options."""
        options = ("--resource-class", self.rc, "--trait", "CUSTOM_A",
                   "--forbid-trait", "CUSTOM_GPU", "--min-cpus", "4",
                   "--shard", "s1")
        expected = [
            ["resource_class", 4], ["available", 4],
            ["not_in_maintenance", 3], ["power_state", 3],
            ["unreserved", 3], ["traits", 2], ["forbidden_traits", 1],
            ["property:cpus>=4", 1], ["shard", 1]]
        for program in ("baremetal-alloc", "openstack"):
            rows = self.cli(program, "explain", *options)
            self.assertEqual(expected,
                             [[r["Step"], r["Count"]] for r in rows])
            self.assertEqual([False], list({r["Emptied"] for r in rows}))
        for program, option, letter in (
                ("openstack", ("--cpu-arch", "aarch64"), "b"),
                ("baremetal-alloc", ("--node-owner", "p2"), "c")):
            created = self.cli(program, "create", "--resource-class",
                               self.rc, *option, "--wait", "60")
            try:
                node = self.target.node(created["node_uuid"])
                self.assertEqual(self.names[letter], node["name"])
            finally:
                self.client.delete_allocation(created["uuid"])


globals().update(targets.per_target(Constrained))
