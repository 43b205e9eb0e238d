"""Fuzz a running server with requests generated from its own schemas.

Hypothesis builds requests for every documented operation
(:data:`openapi.OPERATIONS`): bodies from the very JSON schemas the server
validates with (mostly valid, so the state machine is exercised), then
mutated — wrong types, unknown keys, huge and unicode strings, deep nesting,
broken JSON, odd versions, unknown query parameters, foreign users and bad
credentials.  Every answer must be below 500 and free of tracebacks; after
the run the database invariants must hold: every allocation's node points
back to it and no node is reserved twice.

Deterministic (``derandomize``) and bounded: ``FUZZ_EXAMPLES`` sequences of
2-8 requests each (override with ``BAREMETAL_ALLOC_FUZZ_EXAMPLES``).  The
same run goes against SQLite and, when CI's URL is set, its first half
against MariaDB (its default collation, foreign project names differing
only in case included).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from typing import Any
from urllib.parse import quote

import requests
import testtools
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, text

from baremetal_allocclient.server import openapi
from baremetal_allocclient.server.api import limits
from baremetal_allocclient.server.domain import identifiers
from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)
from baremetal_allocclient.tests.functional.security import _support as sup

FUZZ_EXAMPLES = int(os.environ.get("BAREMETAL_ALLOC_FUZZ_EXAMPLES", "800"))
#: MariaDB's run: the first half of the same (derandomized) sequences.
#: Generating them costs the same on both databases; what differs is how
#: the stored answers behave, which half of them exercises as well.
MYSQL_EXAMPLES = max(1, FUZZ_EXAMPLES // 2)
NODE_COUNT = 12
RESOURCE_CLASSES = ("fuzz-a", "fuzz-b")
TRAITS = ("CUSTOM_GPU", "CUSTOM_NVME", "HW_CPU_X86_VMX")
TARGETS = ("manage", "provide", "active", "deploy", "deleted", "undeploy",
           "inspect", "clean", "rebuild", "abort", "adopt", "power on",
           "power off", "rebooting", "soft power off")
VERSIONS = ("latest", "1.1", "1.5", "1.37", "1.52", "1.57", "1.58", "1.60",
            "1.73", "1.74", "2.0", "abc", "", "1.", "1.0x")

_WEIRD_TEXT = st.sampled_from([
    "", " ", "名前", "\u202eevil", "\x00", "%00", "../../etc/passwd",
    "'; DROP TABLE nodes; --", "$(id)", "x" * 300, "x" * 70000, "null",
    "CUSTOM_", "-", "~", "1" * 36, "00000000-0000-0000-0000-000000000000",
])
_ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=20) | _WEIRD_TEXT,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


class Pools:
    """Identifiers worth hitting: enrolled nodes, created allocations."""

    def __init__(self, nodes: list[dict[str, Any]]) -> None:
        self.nodes = [n["uuid"] for n in nodes] + [n["name"] for n in nodes]
        self.allocations: list[str] = []

    def node(self) -> st.SearchStrategy[str]:
        return st.sampled_from(self.nodes)

    def ident(self) -> st.SearchStrategy[str]:
        known = st.sampled_from(self.nodes) | st.builds(
            lambda i: self.allocations[i % len(self.allocations)]
            if self.allocations else str(uuid.uuid4()),
            st.integers(0, 10_000))
        return st.one_of(known, known, known, _WEIRD_TEXT,
                         st.text(min_size=1, max_size=40))


def _strings(schema: dict[str, Any]) -> st.SearchStrategy[str]:
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "pattern" in schema:
        pattern = st.from_regex(schema["pattern"], fullmatch=True)
        if "maxLength" in schema:
            pattern = pattern.filter(lambda s: len(s) <= schema["maxLength"])
        return pattern
    return st.text(max_size=min(schema.get("maxLength", 40), 40))


def from_schema(schema: dict[str, Any], pools: Pools,
                name: str = "") -> st.SearchStrategy[Any]:
    """Mostly valid values for the JSON-schema subset used in schemas.py."""
    hint = _hint(name, pools)
    types = schema.get("type")
    if types is None:
        return _ANY_JSON
    if isinstance(types, str):
        types = [types]
    options: list[st.SearchStrategy[Any]] = []
    for kind in types:
        if kind == "null":
            options.append(st.none())
        elif kind == "string":
            options.append(hint if hint is not None else _strings(schema))
        elif kind == "boolean":
            options.append(st.booleans())
        elif kind == "integer":
            options.append(st.integers(schema.get("minimum", -5), 1000))
        elif kind == "array":
            items = schema.get("items", {})
            item = _hint(name + "[]", pools)
            if item is None:
                item = from_schema(items, pools)
            options.append(st.lists(
                item, max_size=min(schema.get("maxItems", 5), 5)))
        elif kind == "object":
            options.append(_object(schema, pools))
    return st.one_of(*options)


def _hint(name: str, pools: Pools) -> st.SearchStrategy[Any] | None:
    hints: dict[str, st.SearchStrategy[Any]] = {
        "resource_class": st.sampled_from(RESOURCE_CLASSES),
        "traits[]": st.sampled_from(TRAITS),
        "candidate_nodes[]": pools.node(),
        "node": pools.node(),
        "owner": st.sampled_from([sup.PROJECT_A, sup.PROJECT_B]),
        "lessee": st.sampled_from([sup.PROJECT_A, sup.PROJECT_B]),
        "name": st.from_regex(identifiers.NAME_RE, fullmatch=True).filter(
            lambda s: len(s) <= 20),
        "uuid": st.uuids().map(str),
        "instance_uuid": st.uuids().map(str),
        "target": st.sampled_from(TARGETS),
        "driver": st.sampled_from(["fake-hardware", "ipmi"]),
        "op": st.sampled_from(["add", "replace", "remove"]),
        "path": st.sampled_from([
            "/name", "/extra/k", "/extra", "/instance_uuid", "/maintenance",
            "/owner", "/lessee", "/resource_class", "/allocation_uuid",
            "/properties/cpus", "/driver"]),
    }
    return hints.get(name)


def _object(schema: dict[str, Any], pools: Pools
            ) -> st.SearchStrategy[dict[str, Any]]:
    props = schema.get("properties", {})
    required = set(schema.get("required", ()))

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, sub in props.items():
            if key in required or draw(st.booleans()):
                result[key] = draw(from_schema(sub, pools, key))
        return result

    return build()


@st.composite
def mutate(draw: st.DrawFn, value: Any) -> bytes:
    """Valid-looking JSON most of the time, hostile bytes otherwise."""
    choice = draw(st.integers(0, 11))
    if choice <= 5:
        return json.dumps(value).encode()
    if choice == 6:
        return json.dumps(draw(_ANY_JSON)).encode()
    if choice == 7 and isinstance(value, dict):
        value = dict(value)
        value[draw(st.text(max_size=10))] = draw(_ANY_JSON)
        return json.dumps(value).encode()
    if choice == 8 and isinstance(value, dict) and value:
        key = draw(st.sampled_from(sorted(value)))
        value = dict(value)
        value[key] = draw(_ANY_JSON | _WEIRD_TEXT)
        return json.dumps(value).encode()
    if choice == 9:
        depth = draw(st.sampled_from([20, 26, 500, 20000]))
        return b"[" * depth + b"]" * draw(st.sampled_from([0, depth]))
    if choice == 10:
        raw = json.dumps(value).encode()
        return raw[: draw(st.integers(0, max(len(raw) - 1, 0)))]
    return draw(st.binary(max_size=200))


#: Operations that change state come up more often than reads.
_WEIGHTS = {
    ("/v1/allocations", "POST"): 8,
    ("/v1/allocations/<ident>", "DELETE"): 3,
    ("/v1/allocations/<ident>", "PATCH"): 2,
    ("/v1/nodes/<ident>/states/provision", "PUT"): 5,
    ("/v1/nodes/<ident>/states/power", "PUT"): 2,
    ("/v1/nodes/<ident>/maintenance", "PUT"): 2,
    ("/v1/nodes/<ident>/maintenance", "DELETE"): 2,
    ("/v1/nodes/<ident>", "PATCH"): 2,
    ("/v1/nodes/<ident>/allocation", "DELETE"): 2,
}
_WEIGHTED_OPS = [op for op in openapi.OPERATIONS
                 for _ in range(_WEIGHTS.get((op.path, op.method), 1))]
_PARAM_VALUES = st.sampled_from([
    "1", "0", "true", "name", "uuid,name", "-1", "100000", "asc", "desc",
    "active", "error", sup.PROJECT_A, sup.PROJECT_B, *RESOURCE_CLASSES])


@st.composite
def fuzz_request(draw: st.DrawFn, pools: Pools) -> dict[str, Any]:
    """Half well-formed (to drive the state machine), half hostile."""
    hostile = draw(st.booleans())
    op = draw(st.sampled_from(_WEIGHTED_OPS))
    path = op.path
    for placeholder, strategy in (
        ("<ident>", pools.ident() if hostile else pools.node()
         if op.path.startswith("/v1/nodes") else pools.ident()),
        ("<trait>", st.sampled_from(TRAITS) | _WEIRD_TEXT),
    ):
        if placeholder in path:
            path = path.replace(placeholder,
                                quote(draw(strategy) or "x", safe=""))
    params: list[tuple[str, str]] = []
    allowed = limits.QUERY_PARAMS.get((op.path, op.method), ())
    for _ in range(draw(st.integers(0, 3 if hostile else 1))):
        names: st.SearchStrategy[str] = (
            st.sampled_from(allowed) if allowed else st.nothing())
        if hostile:
            names = names | st.sampled_from(["foo", "all_tenants"]) | (
                st.text(min_size=1, max_size=8))
        elif not allowed:
            break
        values = _PARAM_VALUES | _WEIRD_TEXT if hostile else _PARAM_VALUES
        params.append((draw(names), draw(values)))
    body: bytes | None = None
    if op.body is not None:
        value = draw(from_schema(op.body(), pools))
        if not hostile and (op.path, op.method) == ("/v1/allocations",
                                                    "POST"):
            # Mostly allocations that can succeed, some backfills.
            value["resource_class"] = draw(st.sampled_from(
                RESOURCE_CLASSES))
            if draw(st.integers(0, 4)):
                value.pop("node", None)
                value.pop("uuid", None)
        body = draw(mutate(value)) if hostile else json.dumps(value).encode()
    elif hostile and draw(st.integers(0, 4)) == 0:
        body = draw(st.binary(max_size=50))
    users = [sup.ADMIN, sup.ADMIN, sup.ALICE, sup.BOB]
    user = draw(st.sampled_from([*users, None, "bad"] if hostile else users))
    version = draw(st.sampled_from(VERSIONS) if hostile and draw(
        st.integers(0, 2)) == 0 else st.just("latest"))
    content_type = draw(st.sampled_from(
        ["application/json", "text/plain", "application/xml"])
        if hostile else st.just("application/json"))
    return {"method": op.method, "path": path, "params": params,
            "body": body, "user": user, "version": version,
            "content_type": content_type}


class FuzzTests(testtools.TestCase):
    """Thousands of generated requests against one server process on
    SQLite; subclasses set ``kind`` to run on another database."""

    kind = "sqlite"
    #: Sequences this class sends (``test_fuzz``'s ``max_examples``).
    examples = FUZZ_EXAMPLES
    server: InProcessServer
    creds: sup.Credentials
    pools: Pools
    sent: int = 0
    http_time: float = 0.0
    statuses: dict[int, int]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        owners = [sup.PROJECT_A, sup.PROJECT_B, None]
        cls.server = serve_for_class(
            cls, "--step-delay", "0.01", kind=cls.kind, http_basic=True,
            inventory={
                f"fuzz-{i}": {
                    "driver": "fake-hardware",
                    "resource_class": RESOURCE_CLASSES[i % 2],
                    "traits": list(TRAITS[: i % 4]),
                    **({"owner": owners[i % 3]} if owners[i % 3]
                       else {}),
                    **({"lessee": sup.PROJECT_A} if i % 5 == 0 else {}),
                } for i in range(NODE_COUNT)})
        cls.creds = cls.server.creds
        nodes = cls.server.expect(200, "GET", "/v1/nodes/detail")
        cls.pools = Pools(nodes["nodes"])
        cls.statuses = {}

    def _send(self, spec: dict[str, Any]) -> None:
        began = time.monotonic()
        user = spec["user"]
        auth: tuple[str, str] | bool
        if user is None:
            auth = False
        elif user == "bad":
            auth = (sup.ALICE, "not-the-password")
        else:
            auth = self.creds.auth(user)
        headers = {"Content-Type": spec["content_type"]}
        response = self.server.request(
            spec["method"], spec["path"], auth=auth,
            version=spec["version"], params=spec["params"],
            data=spec["body"], headers=headers)
        type(self).sent += 1
        type(self).http_time += time.monotonic() - began
        status = response.status_code
        self.statuses[status] = self.statuses.get(status, 0) + 1
        context = (f"{spec['method']} {spec['path'][:200]} "
                   f"{spec['params']!r:.300} body={spec['body']!r:.300} "
                   f"-> {status}: {response.text[:500]}")
        self.assertLess(status, 500, context)
        for marker in ("Traceback", 'File "/', "sqlalchemy", "Internal"):
            self.assertNotIn(marker, response.text, context)
        if status == 201 and spec["path"] == "/v1/allocations":
            self.pools.allocations.append(response.json()["uuid"])
        if status >= 400:
            self.assertTrue(response.content, context)
            if status not in (413, 431):  # the front end's, before the app
                response.json()  # errors are JSON, whatever was sent

    @settings(max_examples=FUZZ_EXAMPLES, derandomize=True, deadline=None,
              database=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def test_fuzz(self, data: st.DataObject) -> None:
        self._sequence(data)

    def _sequence(self, data: st.DataObject) -> None:
        """One example: 2 to 8 generated requests, each answer checked."""
        specs = data.draw(st.lists(fuzz_request(self.pools), min_size=2,
                                   max_size=8))
        for spec in specs:
            self._send(spec)

    def test_zz_invariants_after_fuzzing(self) -> None:
        """Runs after test_fuzz (alphabetical order within the class)."""
        if type(self).sent == 0:
            self.skipTest("run together with test_fuzz")
        started = time.monotonic()
        self._settle()
        self._check_api_invariants()
        self._check_database_invariants()
        log = self.server.log()
        self.assertNotIn("Traceback", log)
        self.assertNotIn("Unexpected error", log)
        self.assertEqual([], sup.secrets_in(log, self.creds))
        self.assertGreaterEqual(type(self).sent, self.examples * 3)
        print(f"\nfuzz ({self.kind}): {type(self).sent} requests, statuses "
              f"{dict(sorted(self.statuses.items()))}, "
              f"{type(self).http_time:.1f}s in HTTP, settle+check "
              f"{time.monotonic() - started:.1f}s")

    def _settle(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            body = self.server.expect(200, "GET",
                                      "/v1/allocations?state=allocating")
            if not body["allocations"]:
                return
            time.sleep(0.2)
        raise AssertionError("allocations still allocating after fuzzing")

    def _all(self, path: str, key: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        url: str | None = self.server.endpoint + path
        while url:
            response = requests.get(
                url, auth=self.creds.auth(sup.ADMIN), timeout=30,
                headers={"X-OpenStack-Ironic-API-Version": "latest"})
            self.assertEqual(200, response.status_code, response.text)
            body = response.json()
            items += body[key]
            url = body.get("next")
        return items

    def _check_api_invariants(self) -> None:
        allocations = {a["uuid"]: a for a in self._all(
            "/v1/allocations?limit=100", "allocations")}
        nodes = {n["uuid"]: n for n in self._all(
            "/v1/nodes/detail?limit=100", "nodes")}
        held: dict[str, str] = {}
        for alloc in allocations.values():
            self.assertNotEqual("allocating", alloc["state"])
            node_uuid = alloc["node_uuid"]
            if node_uuid is None:
                continue
            self.assertNotIn(node_uuid, held, "node reserved twice")
            held[node_uuid] = alloc["uuid"]
            self.assertEqual(alloc["uuid"],
                             nodes[node_uuid]["allocation_uuid"], alloc)
            self.assertEqual(alloc["uuid"],
                             nodes[node_uuid]["instance_uuid"], alloc)
        for node in nodes.values():
            if node["allocation_uuid"] is not None:
                self.assertEqual(node["uuid"], allocations[
                    node["allocation_uuid"]]["node_uuid"], node)

    def _check_database_invariants(self) -> None:
        engine = create_engine(self.server.db_url)
        self.addCleanup(engine.dispose)
        with engine.connect() as db:
            twice = db.execute(text(
                "SELECT node_id FROM allocations WHERE node_id IS NOT NULL "
                "GROUP BY node_id HAVING COUNT(*) > 1")).all()
            self.assertEqual([], twice)
            mismatched = db.execute(text(
                "SELECT a.uuid FROM allocations a LEFT JOIN nodes n "
                "ON n.id = a.node_id WHERE a.node_id IS NOT NULL AND "
                "(n.id IS NULL OR n.allocation_id IS NULL "
                "OR n.allocation_id <> a.id)")).all()
            self.assertEqual([], mismatched)
            dangling = db.execute(text(
                "SELECT n.uuid FROM nodes n LEFT JOIN allocations a "
                "ON a.id = n.allocation_id WHERE n.allocation_id IS NOT "
                "NULL AND (a.id IS NULL OR a.node_id IS NULL "
                "OR a.node_id <> n.id)")).all()
            self.assertEqual([], dangling)


class MySQLFuzzTests(FuzzTests):
    """The same run on MariaDB, its first half (skipped when CI's URL is
    not set)."""

    kind = "mysql"
    examples = MYSQL_EXAMPLES

    @settings(max_examples=MYSQL_EXAMPLES, derandomize=True, deadline=None,
              database=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def test_fuzz(self, data: st.DataObject) -> None:
        self._sequence(data)
