"""The server's layout: two wings that meet only at named seams, shared
plumbing that imports neither wing, handlers without SQL or
transactions of their own, services that speak the domain (no HTTP),
and HTTP plumbing without SQL.  (No import cycle and no oversized
module anywhere in the package: ``tests/unit/test_import_graph.py``.)
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
SHARED_PACKAGES = (f"{SERVER}.api", f"{SERVER}.db", f"{SERVER}.domain")
API = f"{SERVER}.api"
#: The service layers: they take values and raise domain errors.
SERVICE_PACKAGES = (f"{ALLOCATION}.service", f"{IRONIC}.service")
#: The HTTP errors (``api/errors.py``) a module below HTTP must not raise.
HTTP_ERRORS = frozenset({"ApiError", "RouteError", "bad_request",
                         "not_found", "conflict", "not_acceptable",
                         "no_route"})
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


def below_services() -> set[str]:
    """The service modules and every module of a wing they import,
    directly or not, but for rendering (a wing's ``views``) and the
    handlers: what runs below HTTP."""
    found: set[str] = set()
    pending = [name for name in GRAPH
               if any(import_graph.within(name, package)
                      for package in SERVICE_PACKAGES)]
    while pending:
        name = pending.pop()
        if name in found:
            continue
        found.add(name)
        pending.extend(
            dep for dep in GRAPH[name]
            if (import_graph.within(dep, ALLOCATION)
                or import_graph.within(dep, IRONIC))
            and not dep.endswith(".views")
            and not any(import_graph.within(dep, package)
                        for package in HANDLER_PACKAGES))
    return found


def http_errors_raised(tree: ast.Module) -> list[str]:
    """Every ``raise`` of an HTTP error in a module, as ``line: source``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        raised = node.exc.func if isinstance(node.exc, ast.Call) \
            else node.exc
        name = raised.attr if isinstance(raised, ast.Attribute) else (
            raised.id if isinstance(raised, ast.Name) else None)
        if name in HTTP_ERRORS:
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


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

    def test_services_import_no_http(self) -> None:
        below = below_services()
        self.assertIn(f"{ALLOCATION}.service.creating", below)
        self.assertIn(f"{IRONIC}.port_rules", below)
        self.assertIn(f"{ALLOCATION}.lookup", below)
        speaking_http = {name: sorted(dep for dep in GRAPH[name]
                                      if import_graph.within(dep, API))
                         for name in below}
        self.assertEqual({}, {k: v for k, v in speaking_http.items() if v})

    def test_services_raise_no_http_error(self) -> None:
        trees = handler_trees(*sorted(below_services()))
        self.assertIn(f"{IRONIC}.node_changes", trees)
        raising = {name: found for name, tree in trees.items()
                   if (found := http_errors_raised(tree))}
        self.assertEqual({}, raising)

    def test_http_errors_raised_are_found(self) -> None:
        tree = ast.parse("raise bad_request('x')\n"
                         "raise errors.ApiError(400, 'x')\n"
                         "raise Invalid('x')\n"
                         "raise\n")
        self.assertEqual(["1: raise bad_request('x')",
                          "2: raise errors.ApiError(400, 'x')"],
                         http_errors_raised(tree))

    def test_http_plumbing_imports_no_sqlalchemy(self) -> None:
        api = {name for name in GRAPH if import_graph.within(name, API)}
        self.assertIn(f"{API}.context", api)
        with_sql = {name for name in api
                    if any(import_graph.within(dep, "sqlalchemy")
                           for dep in GRAPH[name])}
        self.assertEqual(set(), with_sql)

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

    def test_handlers_work_in_no_transaction(self) -> None:
        # Handlers pass the services plain values (identifiers, the
        # principal), never a lookup to run in the service's session.
        trees = handler_trees(*HANDLER_PACKAGES)
        self.assertIn(f"{IRONIC}.handlers.ports", trees)
        self.assertIn(f"{ALLOCATION}.handlers.allocations", trees)
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
