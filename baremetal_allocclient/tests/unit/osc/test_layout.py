"""The command line's modules: no import cycle, no command module imported
by another module, none over 800 lines.

Read from the source (every ``import`` statement, those inside functions
included), so an import made late to save start-up time counts too.
"""

from __future__ import annotations

import ast
import os

import testtools

import baremetal_allocclient

PACKAGE_DIR = os.path.dirname(baremetal_allocclient.__file__)
#: The modules under test: the ``osc`` package and ``shell.py``.
ROOTS = ("osc", "shell.py")
#: Modules that define cliff commands (the verbs).
COMMAND_MODULES = frozenset(
    "baremetal_allocclient.osc.v1." + name
    for name in ("allocation", "create", "leases", "capacity", "explain",
                 "completion"))
MAX_LINES = 800


def cli_modules() -> dict[str, str]:
    """Module name -> file path, for every module under :data:`ROOTS`."""
    found: dict[str, str] = {}
    for root in ROOTS:
        path = os.path.join(PACKAGE_DIR, root)
        files = [path] if path.endswith(".py") else [
            os.path.join(folder, name)
            for folder, _dirs, names in os.walk(path)
            for name in names if name.endswith(".py")]
        for file in files:
            rel = os.path.relpath(file, os.path.dirname(PACKAGE_DIR))
            name = rel[:-3].replace(os.sep, ".")
            found[name.removesuffix(".__init__")] = file
    return found


def imports_of(module: str, path: str, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``module``'s source imports."""
    with open(path, encoding="utf-8") as stream:
        tree = ast.parse(stream.read())
    package = module if path.endswith("__init__.py") else \
        module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] \
                    if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in names if name in known and name != module}


def import_graph() -> dict[str, set[str]]:
    modules = cli_modules()
    known = set(modules)
    return {name: imports_of(name, path, known)
            for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (its modules in order), or None."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node):], node]
        if node in done:
            return None
        for target in sorted(graph[node]):
            cycle = visit(target, [*path, node])
            if cycle:
                return cycle
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start, [])
        if cycle:
            return cycle
    return None


class TestLayout(testtools.TestCase):
    def test_the_graph_is_read(self) -> None:
        graph = import_graph()
        self.assertIn("baremetal_allocclient.osc.v1.base",
                      graph["baremetal_allocclient.osc.v1.allocation"])
        self.assertIn("baremetal_allocclient.osc.v1.create_modes",
                      graph["baremetal_allocclient.osc.v1.create"])

    def test_no_import_cycle(self) -> None:
        self.assertIsNone(find_cycle(import_graph()))

    def test_find_cycle_finds_one(self) -> None:
        self.assertEqual(["a", "b", "a"],
                         find_cycle({"a": {"b"}, "b": {"a"}}))
        self.assertIsNone(find_cycle({"a": {"b"}, "b": set()}))

    def test_no_module_imports_a_command_module(self) -> None:
        importers = {
            module: sorted(targets & COMMAND_MODULES)
            for module, targets in import_graph().items()
            if targets & COMMAND_MODULES}
        self.assertEqual({}, importers)

    def test_no_module_over_800_lines(self) -> None:
        long = {}
        for name, path in cli_modules().items():
            with open(path, encoding="utf-8") as stream:
                count = len(stream.readlines())
            if count > MAX_LINES:
                long[name] = count
        self.assertEqual({}, long)
