"""The package has no import cycle, and no module is too long.

The graph is read from the source by ``tests/fixtures/import_graph.py``.
"""

from __future__ import annotations

import testtools

from baremetal_allocclient.tests.fixtures.import_graph import (
    PACKAGE,
    import_graph,
    lines_of,
    one_cycle,
    strongly_connected,
)

#: Longest module allowed, in lines.
MAX_LINES = 800


class ImportGraphTest(testtools.TestCase):
    def test_the_graph_is_read(self) -> None:
        graph, _modules = import_graph()
        targets = {target for _src, target, _line in
                   graph[f"{PACKAGE}.v1.client"]}
        self.assertIn(f"{PACKAGE}.v1.session", targets)
        # Function-level and TYPE_CHECKING imports count too.
        self.assertIn(f"{PACKAGE}.v1.grouping", targets)
        self.assertIn(f"{PACKAGE}.v1.retries", targets)

    def test_cycles_are_found(self) -> None:
        graph = {
            "a": [("a", "b", 1)], "b": [("b", "c", 2)],
            "c": [("c", "a", 3)], "d": [("d", "a", 4)],
        }
        self.assertEqual([["a", "b", "c"]], strongly_connected(graph))
        self.assertEqual("a (line 1) -> b (line 2) -> c (line 3) -> a",
                         one_cycle(graph, ["a", "b", "c"]))

    def test_no_import_cycle(self) -> None:
        graph, _modules = import_graph()
        cycles = [one_cycle(graph, component)
                  for component in strongly_connected(graph)]
        self.assertEqual([], cycles, "import cycles:\n" + "\n".join(cycles))

    def test_no_module_over_the_limit(self) -> None:
        _graph, modules = import_graph()
        long = []
        for name, path in modules.items():
            count = lines_of(path)
            if count > MAX_LINES:
                long.append(f"{name}: {count} lines")
        self.assertEqual([], long, f"modules over {MAX_LINES} lines")
