"""Every numeric input of every route, with numbers of any size.

Hypothesis sends integers of up to 10,000 digits (more than Python's
``int()`` reads, more than ``float()`` takes), the 64-bit edges, and
floats at their limits (the largest double, one past it, the smallest
denormal, ``-0.0``) wherever a client can put a number: the API version
header, ``Prefer: wait``, every ``limit``, the capacity constraints, and
every number of every request body (the schemas' numeric fields and the
free-form ``extra`` and ``properties``, in creates and patches).

Every answer must be below 500 and quote no exception, and a request
the server refused must have stored nothing: the rows a request writes
(allocations, nodes, their properties and extra, ports) are read from
the database before and after each refused request.  On SQLite,
PostgreSQL and MariaDB (whose JSON and DOUBLE columns are where floats
at the limits could differ).

``test_every_numeric_field_is_tried`` keeps the table of sites whole:
a numeric field added to a schema without a site here fails it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import quote

import requests
import testtools
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, text

from baremetal_allocclient.constraints import EXPLAIN_PATH
from baremetal_allocclient.groups import PATH as GROUPS_PATH
from baremetal_allocclient.server import openapi
from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)

EXAMPLES = int(os.environ.get("BAREMETAL_ALLOC_NUMBER_EXAMPLES", "150"))
_LEAKS = ("Traceback", "Exceeds the limit", "int_max_str_digits",
          "OverflowError", "sqlalchemy", "[SQL", "psycopg", "pymysql")
_EXTENSIONS = "X-Baremetal-Alloc-Extensions"

_EDGES = (
    "0", "-0", "1", "-1", "9223372036854775807", "9223372036854775808",
    "-9223372036854775808", "-9223372036854775809",
    "18446744073709551616", "1" + "0" * 308, "1" + "0" * 4299,
    "1" + "0" * 4300, "1" + "0" * 9999, "0" * 50 + "7",
    "1.7976931348623157e308", "-1.7976931348623157e308",
    "1.7976931348623159e308", "5e-324", "-5e-324", "4e-324",
    "2.2250738585072014e-308", "1e-400", "-0.0", "0.0", "1e308",
    "123456789012345678901234567890.5", "9" * 400 + ".0",
)
#: A number as a client writes it: JSON's grammar, any size.
NUMBER_TEXT = st.one_of(
    st.sampled_from(_EDGES),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.tuples(st.sampled_from(("", "-")), st.integers(1, 10_000),
              st.sampled_from("123456789")).map(
        lambda t: t[0] + t[2] * t[1]),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)


@dataclass(frozen=True)
class Site:
    """Where a number goes: a request made from its text."""

    name: str
    method: str
    path: str  # {node}, {allocation}: filled in from the fixture
    body: Callable[[str], str] | None = None
    headers: Callable[[str], dict[str, str]] = lambda _n: {}
    #: (operation id, JSON pointer with * for items) of schema fields
    covers: tuple[tuple[str, str], ...] = ()


def _create(extra: str = "", rc: str = "rc-none") -> str:
    return f'{{"resource_class": "{rc}"{extra}}}'


def _patch(path: str, number: str) -> str:
    return f'[{{"op": "add", "path": "{path}", "value": {number}}}]'


SITES: tuple[Site, ...] = (
    Site("api version minor", "GET", "/v1/nodes",
         headers=lambda n: {"X-OpenStack-Ironic-API-Version": f"1.{n}"}),
    Site("api version major", "GET", "/v1/allocations",
         headers=lambda n: {"X-OpenStack-Ironic-API-Version": f"{n}.1"}),
    Site("Prefer: wait", "POST", "/v1/allocations", lambda n: _create(),
         headers=lambda n: {"Prefer": f"wait={n}"}),
    *(Site(f"limit of {path}", "GET", f"{path}?limit={{n}}")
      for path in ("/v1/allocations", "/v1/nodes", "/v1/nodes/detail",
                   "/v1/ports", "/v1/ports/detail",
                   "/v1/nodes/{node}/ports")),
    Site("capacity min", "GET",
         "/v1/allocation_capacity?constraints={min}"),
    Site("capacity eq", "GET", "/v1/allocation_capacity?constraints={eq}"),
    Site("allocation extra", "POST", "/v1/allocations",
         lambda n: _create(f', "extra": {{"n": [{n}]}}')),
    Site("queue timeout", "POST", "/v1/allocations",
         lambda n: _create(f', "queue": {{"timeout": {n}}}'),
         headers=lambda n: {_EXTENSIONS: "queue"}),
    Site("constraint min", "POST", "/v1/allocations",
         lambda n: _create(', "constraints": {"properties": '
                           f'[{{"key": "cpus", "min": {n}}}]}}'),
         headers=lambda n: {_EXTENSIONS: "constraints"},
         covers=(("explainAllocation", "/constraints/properties/*/min"),
                 ("createAllocationGroup",
                  "/constraints/properties/*/min"))),
    Site("constraint eq", "POST", EXPLAIN_PATH,
         lambda n: _create(', "constraints": {"properties": '
                           f'[{{"key": "cpus", "eq": {n}}}]}}'),
         headers=lambda n: {_EXTENSIONS: "constraints"},
         covers=(("explainAllocation", "/constraints/properties/*/eq"),
                 ("createAllocationGroup",
                  "/constraints/properties/*/eq"))),
    Site("constraint max", "POST", "/v1/allocations",
         lambda n: _create(', "constraints": {"properties": '
                           f'[{{"key": "cpus", "max": {n}}}]}}'),
         headers=lambda n: {_EXTENSIONS: "constraints"},
         covers=(("explainAllocation", "/constraints/properties/*/max"),
                 ("createAllocationGroup",
                  "/constraints/properties/*/max"),
                 ("createAllocation", "/constraints/properties/*/max"))),
    Site("constraint in", "POST", EXPLAIN_PATH,
         lambda n: _create(', "constraints": {"properties": '
                           f'[{{"key": "cpus", "in": ["a", {n}]}}]}}'),
         headers=lambda n: {_EXTENSIONS: "constraints"},
         covers=(("explainAllocation", "/constraints/properties/*/in/*"),
                 ("createAllocationGroup",
                  "/constraints/properties/*/in/*"),
                 ("createAllocation", "/constraints/properties/*/in/*"))),
    Site("constraint not_in", "POST", "/v1/allocations",
         lambda n: _create(', "constraints": {"properties": '
                           f'[{{"key": "cpus", "not_in": [{n}]}}]}}'),
         headers=lambda n: {_EXTENSIONS: "constraints"},
         covers=(("explainAllocation",
                  "/constraints/properties/*/not_in/*"),
                 ("createAllocationGroup",
                  "/constraints/properties/*/not_in/*"),
                 ("createAllocation",
                  "/constraints/properties/*/not_in/*"))),
    Site("group count", "POST", GROUPS_PATH,
         lambda n: f'{{"resource_class": "rc-none", "count": {n}}}',
         headers=lambda n: {_EXTENSIONS: "groups"},
         covers=(("createAllocationGroup", "/count"),)),
    Site("constraint any_of", "POST", EXPLAIN_PATH,
         lambda n: _create(', "constraints": {"any_of": [[{"key": "c", '
                           f'"min": {n}}}, {{"key": "c", "max": {n}}}, '
                           f'{{"key": "c", "in": [{n}]}}, {{"key": "c", '
                           f'"not_in": [{n}]}}], [{{"key": "c", "eq": {n}}}'
                           ']]}'),
         headers=lambda n: {_EXTENSIONS: "constraints"},
         covers=tuple((op, f"/constraints/any_of/*/*/{field}")
                      for op in ("explainAllocation", "createAllocation",
                                 "createAllocationGroup")
                      for field in ("min", "max", "eq", "in/*",
                                    "not_in/*"))),
    Site("group spread", "POST", GROUPS_PATH,
         lambda n: '{"resource_class": "rc-none", "count": 2, "spread": '
                   f'{{"over": "shard", "max_per_domain": {n}, '
                   f'"min_domains": {n}}}}}',
         headers=lambda n: {_EXTENSIONS: "groups"},
         covers=(("createAllocationGroup", "/spread/max_per_domain"),
                 ("createAllocationGroup", "/spread/min_domains"))),
    Site("allocation patch", "PATCH", "/v1/allocations/{allocation}",
         lambda n: _patch("/extra/n", n)),
    Site("node create", "POST", "/v1/nodes",
         lambda n: '{"driver": "fake-hardware", "properties": '
                   f'{{"cpus": {n}}}, "extra": {{"n": {n}}}}}'),
    Site("node patch", "PATCH", "/v1/nodes/{node}",
         lambda n: _patch("/properties/cpus", n)),
    Site("power timeout", "PUT", "/v1/nodes/{node}/states/power",
         lambda n: f'{{"target": "power off", "timeout": {n}}}',
         covers=(("setPowerState", "/timeout"),)),
    Site("port extra", "POST", "/v1/ports",
         lambda n: '{"node_uuid": "{node}", "address": '
                   f'"52:54:00:12:34:56", "extra": {{"n": {n}}}}}'),
)


def _numeric_fields(schema: Any, pointer: str = "") -> set[str]:
    """JSON pointers (``*`` for array items) of a schema's numbers."""
    found: set[str] = set()
    if not isinstance(schema, dict):
        return found
    kinds = schema.get("type")
    kinds = {kinds} if isinstance(kinds, str) else set(kinds or ())
    if kinds & {"integer", "number"}:
        found.add(pointer)
    for name, inner in (schema.get("properties") or {}).items():
        found |= _numeric_fields(inner, f"{pointer}/{name}")
    if "items" in schema:
        found |= _numeric_fields(schema["items"], f"{pointer}/*")
    return found


class SiteTableTests(testtools.TestCase):
    def test_every_numeric_field_is_tried(self) -> None:
        covered = {pair for site in SITES for pair in site.covers}
        covered |= {("createAllocation", "/queue/timeout"),
                    ("createAllocation", "/constraints/properties/*/min"),
                    ("createAllocation", "/constraints/properties/*/eq")}
        fields = {(op.operation_id, pointer)
                  for op in openapi.OPERATIONS if op.body is not None
                  for pointer in _numeric_fields(op.body())}
        self.assertIn(("setPowerState", "/timeout"), fields)
        self.assertEqual(set(), fields - covered)


class _NumberInputs:
    """Mixin; ``kind`` names the database."""

    kind: ClassVar[str]
    server: ClassVar[InProcessServer]
    engine: ClassVar[Any]
    node: ClassVar[str]
    allocation: ClassVar[str]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        cls.server = serve_for_class(cls, "--db-connections", "4",
                                     "--max-prefer-wait", "2", kind=cls.kind)
        cls.engine = create_engine(cls.server.db_url)
        cls.addClassCleanup(cls.engine.dispose)  # type: ignore[attr-defined]
        cls.node = cls.server.make_nodes(
            1, "rc-numbers", properties={"cpus": 4})[0]["uuid"]
        cls.allocation = cls.server.expect(
            201, "POST", "/v1/allocations",
            {"resource_class": "rc-none", "name": "numbers"})["uuid"]

    def _stored(self) -> list[Any]:
        """What requests write, in a stable order (no state a worker or
        the fake hardware changes later)."""
        queries = (
            "SELECT uuid, name, owner, resource_class, extra FROM "
            "allocations ORDER BY uuid",
            "SELECT uuid, name, properties, extra FROM nodes ORDER BY uuid",
            "SELECT node_id, " + ('"key"' if self.kind != "mysql"
                                  else "`key`") +
            ", text, number FROM node_properties ORDER BY 1, 2",
            "SELECT uuid, address, extra FROM ports ORDER BY uuid",
        )
        with self.engine.connect() as conn:
            return [[tuple(map(str, row)) for row in conn.execute(text(q))]
                    for q in queries]

    def _request(self, site: Site, number: str) -> requests.Response:
        def document(op: str) -> str:
            return quote(
                f'{{"properties": [{{"key": "cpus", "{op}": {number}}}]}}')

        path = site.path.format(
            n=quote(number), node=self.node, allocation=self.allocation,
            min=document("min"), eq=document("eq"))
        body = site.body(number).replace("{node}", self.node) \
            if site.body else None
        headers = {"X-OpenStack-Ironic-API-Version": "latest",
                   "Content-Type": "application/json",
                   **site.headers(number)}
        return requests.request(site.method, self.server.endpoint + path,
                                data=body, headers=headers, timeout=60)

    def _clean_up(self, site: Site, response: requests.Response) -> None:
        """Remove what an accepted create made, so the next is comparable."""
        if response.status_code != 201 or site.method != "POST":
            return
        made = response.json()
        if "allocations" in made:  # a group
            for member in made["allocations"]:
                self.server.request("DELETE",
                                    f"/v1/allocations/{member['uuid']}")
        elif site.path in ("/v1/allocations", "/v1/nodes", "/v1/ports"):
            self.server.request("DELETE", f"{site.path}/{made['uuid']}")

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow,
                                     HealthCheck.data_too_large,
                                     # one method, one class per database
                                     HealthCheck.differing_executors])
    @given(site=st.sampled_from(SITES), number=NUMBER_TEXT)
    def test_no_5xx_and_a_refusal_stores_nothing(self, site: Site,
                                                 number: str) -> None:
        test: Any = self
        before = self._stored()
        response = self._request(site, number)
        case = f"{site.name} with {number[:40]} ({len(number)} chars)"
        test.assertLess(response.status_code, 500,
                        f"{case}: {response.text[:300]}")
        for leak in _LEAKS:
            test.assertNotIn(leak, response.text, case)
        if response.status_code >= 400:
            test.assertEqual(before, self._stored(), case)
            test.assertIn("error_message", response.json(), case)
        self._clean_up(site, response)


class SqliteNumberInputs(_NumberInputs, testtools.TestCase):
    kind = "sqlite"


class PostgresqlNumberInputs(_NumberInputs, testtools.TestCase):
    kind = "postgresql"


class MysqlNumberInputs(_NumberInputs, testtools.TestCase):
    kind = "mysql"
