"""The server's layout: two wings that meet only at named seams, handlers
without SQL, no import cycle, no oversized module.

The module graph is read from the source (``ast``), function-level
imports included, so an import hidden in a function counts too.
"""

from __future__ import annotations

import ast
import pathlib

import fixtures
import testtools

import baremetal_allocclient.server as server_package

PACKAGE = "baremetal_allocclient.server"
ROOT = pathlib.Path(server_package.__file__).parent
ALLOCATION = f"{PACKAGE}.allocation"
IRONIC = f"{PACKAGE}.ironic"
#: The one module of the allocation wing the Ironic wing may import:
#: releasing a node's allocation.
RELEASE_ENTRY = f"{ALLOCATION}.service.releasing"
#: The one module of the Ironic wing the allocation wing may import:
#: undeploying a node when its lease expires.
UNDEPLOY_SEAM = f"{IRONIC}.undeploy"
#: Handlers parse, check the version, call the service and render.
HANDLER_PACKAGES = (f"{ALLOCATION}.handlers", f"{IRONIC}.handlers")
MAX_LINES = 800


def _modules() -> dict[str, pathlib.Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join((PACKAGE, *parts))] = path
    return found


MODULES = _modules()


def imports_of(path: pathlib.Path) -> set[str]:
    """Every module ``path`` imports, anywhere in it (a name imported
    from a package counts as its submodule when there is one)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"relative import in {path}"
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
    return found


GRAPH = {name: imports_of(path) for name, path in MODULES.items()}


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def crossings(source_wing: str, target_wing: str) -> set[tuple[str, str]]:
    """(importer, imported) pairs from one wing into the other."""
    return {(name, dep) for name, deps in GRAPH.items()
            if _in(name, source_wing)
            for dep in deps if _in(dep, target_wing)}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle among the graph's own modules, or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for dep in sorted(graph.get(name, ())):
            if dep not in graph:
                continue
            if state.get(dep) == 1:
                return [*path[path.index(dep):], dep]
            if dep not in state and (cycle := visit(dep)):
                return cycle
        path.pop()
        state[name] = 2
        return None

    for name in sorted(graph):
        if name not in state and (cycle := visit(name)):
            return cycle
    return None


class LayoutTest(testtools.TestCase):
    def test_the_graph_is_read(self) -> None:
        # The checks below would pass on an empty graph.
        self.assertIn(f"{ALLOCATION}.handlers.allocations", GRAPH)
        self.assertIn(RELEASE_ENTRY, GRAPH[f"{IRONIC}.handlers.nodes"])
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
                    if any(_in(name, p) for p in HANDLER_PACKAGES)}
        self.assertIn(f"{IRONIC}.handlers.ports", handlers)
        with_sql = {name for name in handlers
                    if any(_in(dep, "sqlalchemy") for dep in GRAPH[name])}
        self.assertEqual(set(), with_sql)

    def test_no_import_cycle(self) -> None:
        self.assertIsNone(find_cycle(GRAPH))

    def test_no_module_over_the_limit(self) -> None:
        long = {name: n for name, path in MODULES.items()
                if (n := len(path.read_text().splitlines())) > MAX_LINES}
        self.assertEqual({}, long)


class CheckerTest(testtools.TestCase):
    """The checks find what they look for."""

    def test_a_cycle_is_found(self) -> None:
        graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
        self.assertEqual(["a", "b", "c", "a"], find_cycle(graph))

    def test_no_cycle_in_a_tree(self) -> None:
        self.assertIsNone(find_cycle({"a": {"b", "c"}, "b": {"c"},
                                      "c": set()}))

    def test_function_level_imports_count(self) -> None:
        source = self.useFixture(fixtures.TempDir()).join("m.py")
        pathlib.Path(source).write_text(
            "def f():\n"
            f"    from {ALLOCATION} import selection\n"
            "    import sqlalchemy.orm\n")
        self.assertEqual({f"{ALLOCATION}.selection", "sqlalchemy.orm"},
                         imports_of(pathlib.Path(source)))
