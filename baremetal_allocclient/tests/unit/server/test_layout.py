"""The server's layout: two wings that meet only at named seams, shared
plumbing that imports neither wing, and handlers without SQL or
transactions of their own.  (No import cycle and
no oversized module anywhere in the package:
``tests/unit/test_import_graph.py``.)
"""

from __future__ import annotations

import ast
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
#: The shared plumbing: it serves both wings and imports neither.
SHARED_PACKAGES = (f"{SERVER}.api", f"{SERVER}.db")
#: Handlers parse, check the version, call the service and render.
HANDLER_PACKAGES = (f"{ALLOCATION}.handlers", f"{IRONIC}.handlers")
#: The methods of ``Database`` that open a transaction.
TRANSACTION_METHODS = frozenset(
    {"read", "write", "read_connection", "write_connection",
     "statement_connection"})
#: The names a function working in a caller's transaction gives it.
TRANSACTION_PARAMETERS = frozenset({"session", "conn", "connection"})


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


def _imported_names(tree: ast.Module) -> set[str]:
    """The names a module binds by importing (modules, mostly)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0]
                         for alias in node.names)
    return names


def transactions_opened(tree: ast.Module) -> list[str]:
    """Every call of a transaction method (``db.write()``,
    ``ctx.services.db.read()``, ``database.read_connection()`` ...) in a
    module, as ``line: source``.  The same name called on an imported
    module is a function of that module and does not count (the
    service's ``records.read(db, ...)`` opens the transaction there)."""
    imported = _imported_names(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in TRANSACTION_METHODS):
            continue
        owner = node.func.value
        if isinstance(owner, ast.Name) and owner.id in imported:
            continue
        found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def transactions_used(tree: ast.Module) -> list[str]:
    """Every session or connection a module has in hand (it works in a
    transaction): a parameter (of a function or a lambda) or any other
    name so called (``with ... as session``), as ``line: name``."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.arg in TRANSACTION_PARAMETERS:
            found.add(f"{node.lineno}: {node.arg}")
        elif isinstance(node, ast.Name) and node.id in (
            TRANSACTION_PARAMETERS
        ):
            found.add(f"{node.lineno}: {node.id}")
    return sorted(found)


def handler_trees(*packages: str) -> dict[str, ast.Module]:
    """The parsed source of every module of the handler packages."""
    return {name: ast.parse(path.read_text(encoding="utf-8"), str(path))
            for name, path in import_graph.package_modules().items()
            if any(import_graph.within(name, package)
                   for package in packages)}


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

    def test_shared_plumbing_imports_no_wing(self) -> None:
        self.assertIn(f"{SERVER}.api.context", GRAPH)
        self.assertIn(f"{SERVER}.db.lookups", GRAPH)
        wrong = {pair for shared in SHARED_PACKAGES
                 for wing in (ALLOCATION, IRONIC)
                 for pair in crossings(shared, wing)}
        self.assertEqual(set(), wrong)

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

    def test_handlers_open_no_transaction(self) -> None:
        trees = handler_trees(*HANDLER_PACKAGES)
        self.assertIn(f"{IRONIC}.handlers.nodes", trees)
        self.assertIn(f"{ALLOCATION}.handlers.allocations", trees)
        opening = {name: found for name, tree in trees.items()
                   if (found := transactions_opened(tree))}
        self.assertEqual({}, opening)

    def test_ironic_handlers_work_in_no_transaction(self) -> None:
        # The allocation wing's handlers hand the service lookups to run
        # in its transaction (``records.Listing``); the Ironic wing's
        # pass plain values only.
        trees = handler_trees(f"{IRONIC}.handlers")
        self.assertIn(f"{IRONIC}.handlers.ports", trees)
        using = {name: found for name, tree in trees.items()
                 if (found := transactions_used(tree))}
        self.assertEqual({}, using)

    def test_transactions_are_found(self) -> None:
        tree = ast.parse(
            "from service import records\n"
            "def f(ctx, db):\n"
            "    records.read(db, lambda conn: conn)\n"
            "    with ctx.services.db.write() as session:\n"
            "        pass\n"
            "    database = ctx.services.db\n"
            "    database.read_connection()\n"
            "    db.read()\n"
            "def g(session):\n"
            "    pass\n")
        self.assertEqual(
            ["4: ctx.services.db.write()",
             "7: database.read_connection()", "8: db.read()"],
            sorted(transactions_opened(tree)))
        self.assertEqual(["3: conn", "4: session", "9: session"],
                         transactions_used(tree))

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
