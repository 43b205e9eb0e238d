"""The server's layout: two wings that meet only at named seams, and
handlers without SQL.  (No import cycle and no oversized module anywhere
in the package: ``tests/unit/test_import_graph.py``.)
"""

from __future__ import annotations

import pathlib

import fixtures
import testtools

from baremetal_allocclient.tests.fixtures import import_graph

SERVER = "baremetal_allocclient.server"
ALLOCATION = f"{SERVER}.allocation"
IRONIC = f"{SERVER}.ironic"
#: The one module of the allocation wing the Ironic wing may import:
#: releasing a node's allocation.
RELEASE_ENTRY = f"{ALLOCATION}.service.releasing"
#: The one module of the Ironic wing the allocation wing may import:
#: undeploying a node when its lease expires.
UNDEPLOY_SEAM = f"{IRONIC}.undeploy"
#: Handlers parse, check the version, call the service and render.
HANDLER_PACKAGES = (f"{ALLOCATION}.handlers", f"{IRONIC}.handlers")


def server_graph() -> dict[str, set[str]]:
    """Every server module and every module it imports (the package's
    and others, such as ``sqlalchemy.orm``)."""
    modules = import_graph.package_modules()
    names = set(modules)
    return {name: {target for _src, target, _line
                   in import_graph.all_imports(name, path, names)}
            for name, path in modules.items()
            if import_graph.within(name, SERVER)}


GRAPH = server_graph()


def crossings(source_wing: str, target_wing: str) -> set[tuple[str, str]]:
    """(importer, imported) pairs from one wing into the other."""
    return {(name, dep) for name, deps in GRAPH.items()
            if import_graph.within(name, source_wing)
            for dep in deps if import_graph.within(dep, target_wing)}


class LayoutTest(testtools.TestCase):
    def test_the_graph_is_read(self) -> None:
        # The checks below would pass on an empty graph.
        self.assertIn(f"{ALLOCATION}.handlers.allocations", GRAPH)
        self.assertIn(RELEASE_ENTRY, GRAPH[f"{IRONIC}.service.nodes"])
        self.assertIn(UNDEPLOY_SEAM, GRAPH[f"{ALLOCATION}.lease_expiry"])

    def test_ironic_reaches_allocation_only_through_release(self) -> None:
        wrong = {pair for pair in crossings(IRONIC, ALLOCATION)
                 if pair[1] not in (RELEASE_ENTRY, ALLOCATION,
                                    f"{ALLOCATION}.service")}
        self.assertEqual(set(), wrong)

    def test_allocation_reaches_ironic_only_through_the_seam(self) -> None:
        wrong = {pair for pair in crossings(ALLOCATION, IRONIC)
                 if pair[1] not in (UNDEPLOY_SEAM, IRONIC)}
        self.assertEqual(set(), wrong)

    def test_handlers_import_no_sqlalchemy(self) -> None:
        handlers = {name for name in GRAPH
                    if any(import_graph.within(name, package)
                           for package in HANDLER_PACKAGES)}
        self.assertIn(f"{IRONIC}.handlers.ports", handlers)
        with_sql = {name for name in handlers
                    if any(import_graph.within(dep, "sqlalchemy")
                           for dep in GRAPH[name])}
        self.assertEqual(set(), with_sql)

    def test_function_level_imports_count(self) -> None:
        source = pathlib.Path(
            self.useFixture(fixtures.TempDir()).join("m.py"))
        source.write_text(
            "def f():\n"
            f"    from {ALLOCATION} import selection\n"
            "    import sqlalchemy.orm\n")
        modules = {f"{ALLOCATION}.selection"}
        found = {target for _src, target, _line in
                 import_graph.all_imports(f"{SERVER}.m", source, modules)}
        self.assertEqual({f"{ALLOCATION}.selection", "sqlalchemy.orm"},
                         found)
