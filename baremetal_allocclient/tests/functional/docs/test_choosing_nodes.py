"""The "Choosing nodes" page's examples, run as the page includes them,
against a reference server set up by the getting-started steps."""

from __future__ import annotations

import json
import re

from baremetal_allocclient.tests.functional.docs.test_examples import (
    UUID_RE,
    _DocsServer,
)


class ChoosingNodesExamplesTest(_DocsServer):
    """CLI, SDK and shell examples of constraints and explain."""

    def test_cli_create_with_constraints(self) -> None:
        out = self.ok("choosing-nodes/create.sh")
        lines = out.splitlines()
        self.assertRegex(lines[0], rf"^{UUID_RE}$", out)
        self.assertRegex(lines[1], rf"^{UUID_RE}$", out)
        # node-2: the only 32-CPU node without VMX; node-3 is preferred
        # and has 64 GiB and 480 GB.
        self.assertEqual(["node-2", "node-3"],
                         [self.nodes[uuid] for uuid in lines[:2]])
        self.assertNothingAllocated()

    def test_cli_explain(self) -> None:
        out = self.ok("choosing-nodes/explain.sh")
        self.assertRegex(out, r"\| property:cpus>=64\s+\|\s+0 \| True\s+\|")
        table_end = out.rindex("+") + 1
        doc = json.loads(out[table_end:])
        self.assertEqual(
            [("resource_class", 4), ("available", 4),
             ("not_in_maintenance", 4), ("power_state", 4),
             ("unreserved", 4), ("traits", 2), ("property:cpus>=64", 0)],
            [(row["Step"], row["Count"]) for row in doc])
        self.assertNothingAllocated()

    def test_shell_reserve_or_explain(self) -> None:
        out = self.ok("choosing-nodes/reserve-or-explain.sh", "16",
                      env=self.client_env)
        self.assertRegex(out.strip(), rf"^reserved: allocation {UUID_RE}$")
        result = self.run_file("choosing-nodes/reserve-or-explain.sh", "64",
                               env=self.client_env)
        self.assertEqual(1, result.returncode, result)
        self.assertEqual("no node: no node passes property:cpus>=64",
                         result.stdout.strip())
        self.assertNothingAllocated()

    def test_sdk_choose(self) -> None:
        out = self.ok("choosing-nodes/choose.py", env=self.client_env)
        lines = out.splitlines()
        self.assertEqual("reserved node-3", lines[0])
        self.assertEqual(
            "resource_class 4 > available 4 > not_in_maintenance 4 > "
            "power_state 4 > unreserved 4 > property:cpus>=256 0", lines[1])
        self.assertEqual("first empty: property:cpus>=256", lines[2])
        self.assertTrue(re.match(r"allocate failed: \w+", lines[3]), out)
        self.assertNothingAllocated()

    def test_best_fit_and_the_new_operators(self) -> None:
        out = self.ok("choosing-nodes/best-fit.sh")
        first, rest = out.split("\n", 1)
        self.assertIn(self.nodes[first], ("node-1", "node-3"), out)
        table_end = rest.index("[")
        doc = json.loads(rest[table_end:])
        self.assertEqual(
            [("resource_class", 4), ("available", 4),
             ("not_in_maintenance", 4), ("power_state", 4),
             ("unreserved", 4), ("any_traits", 3),
             ("property:cpus<=16", 1),
             ("property:local_gb not in (960)", 1),
             ("property:cpu_arch not exists", 1)],
            [(row["Step"], row["Count"]) for row in doc])
        self.assertNothingAllocated()

    def test_spread(self) -> None:
        result = self.run_file("choosing-nodes/spread.sh")
        self.assertEqual(0, result.returncode, result.stderr)
        lines = result.stdout.splitlines()
        self.assertEqual({"node-0", "node-1", "node-2", "node-3"} & {
            self.nodes[uuid] for uuid in lines[:2]}, {
            self.nodes[uuid] for uuid in lines[:2]})
        disks = {self.nodes[uuid] in ("node-0", "node-2")
                 for uuid in lines[:2]}
        self.assertEqual({True, False}, disks, result.stdout)
        self.assertEqual("refused, exit code 1", lines[-1])
        self.assertIn(
            "spread over local_gb cannot place 3 members, at most 1 per "
            "local_gb: 2 placeable (480 2 free, 960 2 free)",
            result.stderr)
        self.assertNothingAllocated()
