"""The command line's modules: no command module is imported by another
module.  (No import cycle and no oversized module anywhere in the
package: ``tests/unit/test_import_graph.py``.)
"""

from __future__ import annotations

import testtools

from baremetal_allocclient.tests.fixtures import import_graph

#: Modules that define cliff commands (the verbs).
COMMAND_MODULES = frozenset(
    "baremetal_allocclient.osc.v1." + name
    for name in ("allocation", "create", "leases", "capacity", "explain",
                 "completion"))


def cli_graph() -> dict[str, set[str]]:
    """The ``osc`` package's modules and ``shell``, and the package
    modules each imports."""
    graph, _modules = import_graph.import_graph()
    return {name: {target for _src, target, _line in edges}
            for name, edges in graph.items()
            if import_graph.within(name, "baremetal_allocclient.osc")
            or name == "baremetal_allocclient.shell"}


class TestLayout(testtools.TestCase):
    def test_the_graph_is_read(self) -> None:
        graph = cli_graph()
        self.assertIn("baremetal_allocclient.osc.v1.base",
                      graph["baremetal_allocclient.osc.v1.allocation"])
        self.assertIn("baremetal_allocclient.osc.v1.create_modes",
                      graph["baremetal_allocclient.osc.v1.create"])

    def test_no_module_imports_a_command_module(self) -> None:
        importers = {
            module: sorted(targets & COMMAND_MODULES)
            for module, targets in cli_graph().items()
            if targets & COMMAND_MODULES}
        self.assertEqual({}, importers)
