"""The package's import graph has no cycle, and no module is too long.

The graph is read from the source with :mod:`ast`: every ``import`` and
``from ... import`` of a ``baremetal_allocclient`` module, at module
level, inside functions and under ``if TYPE_CHECKING:`` alike (a cycle
through type hints is still a cycle in the design).  ``from package
import name`` is an edge to ``package.name`` when that is a module, else
to ``package``.  Executing a package's ``__init__`` before its modules is
not counted as an edge.  ``tests/`` is left out.
"""

from __future__ import annotations

import ast
import collections
import pathlib

import testtools

import baremetal_allocclient

PACKAGE = "baremetal_allocclient"
ROOT = pathlib.Path(baremetal_allocclient.__file__).parent
#: Longest module allowed, in lines.
MAX_LINES = 800
#: Where cycles and lengths are checked: the whole package.
CHECKED_PACKAGES: tuple[str, ...] = (PACKAGE,)

Edge = tuple[str, str, int]  # importer, imported, line


def module_name(path: pathlib.Path) -> str:
    parts = [PACKAGE, *path.relative_to(ROOT).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules() -> dict[str, pathlib.Path]:
    """Every module of the package but its tests, by dotted name."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        if "tests" in path.relative_to(ROOT).parts:
            continue
        found[module_name(path)] = path
    return found


def _absolute(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base.pop()
    base = base[:len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(name: str, path: pathlib.Path,
               modules: set[str]) -> list[Edge]:
    """The package modules ``name`` imports, with the line of each."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_package = path.name == "__init__.py"
    edges: list[Edge] = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(name, is_package, node)
            for alias in node.names:
                child = f"{source}.{alias.name}"
                targets.append(child if child in modules else source)
        for target in targets:
            if target in modules and target != name:
                edges.append((name, target, node.lineno))
    return edges


def import_graph() -> tuple[dict[str, list[Edge]], dict[str, pathlib.Path]]:
    modules = package_modules()
    names = set(modules)
    graph = {name: imports_of(name, path, names)
             for name, path in modules.items()}
    return graph, modules


def strongly_connected(graph: dict[str, list[Edge]]) -> list[list[str]]:
    """Tarjan's components with more than one module, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for _src, target, _line in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(graph[target])))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return found


def one_cycle(graph: dict[str, list[Edge]], component: list[str]) -> str:
    """A shortest cycle through the component's first module, each edge
    with the line that makes it."""
    members = set(component)
    start = component[0]
    previous: dict[str, Edge] = {}
    queue = collections.deque([start])
    while queue:
        node = queue.popleft()
        for edge in graph[node]:
            target = edge[1]
            if target not in members:
                continue
            if target == start:
                steps = [edge]
                while steps[0][0] != start:
                    steps.insert(0, previous[steps[0][0]])
                return " -> ".join(
                    f"{src} (line {line})" for src, _t, line in steps
                ) + f" -> {start}"
            if target not in previous:
                previous[target] = edge
                queue.append(target)
    return " <-> ".join(component)


def in_scope(name: str) -> bool:
    top_level = name.count(".") == 1
    return top_level or any(
        name == package or name.startswith(package + ".")
        for package in CHECKED_PACKAGES)


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
                  for component in strongly_connected(graph)
                  if any(in_scope(name) for name in component)]
        self.assertEqual([], cycles, "import cycles:\n" + "\n".join(cycles))

    def test_no_module_over_the_limit(self) -> None:
        _graph, modules = import_graph()
        long = []
        for name, path in modules.items():
            count = len(path.read_text(encoding="utf-8").splitlines())
            if in_scope(name) and count > MAX_LINES:
                long.append(f"{name}: {count} lines")
        self.assertEqual([], long, f"modules over {MAX_LINES} lines")
