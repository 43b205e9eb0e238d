"""Values a database cannot store are refused before any SQL runs.

NUL bytes, lone surrogates and non-finite numbers (``NaN``,
``Infinity``, ``1e400``, which Python's ``json`` reads as infinity) are
answered 400 in Ironic's error format on every database, wherever they
appear: query parameters, path segments, string fields, nested JSON.
Before, PostgreSQL answered 500 with the SQL statement in the body and
MariaDB 503 "database unavailable", which clients retry.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import requests
import testtools

from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)

_HEADERS = {
    "X-OpenStack-Ironic-API-Version": "latest",
    "Content-Type": "application/json",
}
_LEAKS = ("INSERT", "UPDATE", "SELECT", "sqlalchemy", "psycopg", "pymysql",
          "Traceback", "[SQL", "(Background")


class _UnstorableTests:
    """Mixin; ``kind`` names the database."""

    kind: ClassVar[str]
    server: ClassVar[InProcessServer]
    node: ClassVar[str]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        cls.server = serve_for_class(cls, "--db-connections", "4",
                                     kind=cls.kind)
        cls.node = cls.server.make_nodes(1, "rc-unstorable")[0]["uuid"]

    def _send(self, method: str, path: str, raw: str | None
              ) -> requests.Response:
        return requests.request(
            method, self.server.endpoint + path, headers=_HEADERS,
            data=None if raw is None else raw.encode("utf-8",
                                                      "surrogatepass"),
            timeout=30,
        )

    def _check_refused(self, resp: requests.Response, case: Any) -> None:
        test: Any = self
        test.assertEqual(400, resp.status_code, f"{case}: {resp.text}")
        fault = json.loads(resp.json()["error_message"])
        test.assertEqual("Client", fault["faultcode"], case)
        test.assertIsNone(fault["debuginfo"], case)
        for leak in _LEAKS:
            test.assertNotIn(leak, resp.text, case)

    def test_bodies(self) -> None:
        node = self.node
        nul = json.dumps("a\u0000b")
        cases = [
            ("POST", "/v1/allocations",
             f'{{"resource_class": {nul}}}'),
            ("POST", "/v1/allocations",
             f'{{"resource_class": "rc", "extra": {{"k": {nul}}}}}'),
            ("POST", "/v1/allocations",
             f'{{"resource_class": "rc", "extra": {{{nul}: 1}}}}'),
            ("POST", "/v1/allocations",
             '{"resource_class": "rc", "extra": {"k": NaN}}'),
            ("POST", "/v1/allocations",
             '{"resource_class": "rc", "extra": {"k": [Infinity]}}'),
            ("POST", "/v1/allocations",
             '{"resource_class": "rc", "extra": {"k": -1e400}}'),
            ("POST", "/v1/allocations",
             '{"resource_class": "rc\\ud800"}'),
            ("POST", "/v1/nodes",
             '{"driver": "fake-hardware", "driver_info": {"x": 1e400}}'),
            ("POST", "/v1/nodes",
             '{"driver": "fake-hardware", "properties": {"x": NaN}}'),
            ("POST", "/v1/nodes",
             f'{{"driver": "fake-hardware", "description": {nul}}}'),
            ("PATCH", f"/v1/nodes/{node}",
             '[{"op": "add", "path": "/instance_info/x", '
             '"value": Infinity}]'),
            ("PATCH", f"/v1/nodes/{node}",
             f'[{{"op": "add", "path": "/extra/x", "value": {nul}}}]'),
            ("PATCH", f"/v1/nodes/{node}",
             '[{"op": "add", "path": "/extra/x", "value": "\\udfff"}]'),
            ("PUT", f"/v1/nodes/{node}/maintenance",
             f'{{"reason": {nul}}}'),
        ]
        for method, path, raw in cases:
            self._check_refused(self._send(method, path, raw),
                                (method, path, raw))

    def test_query_parameters_and_paths(self) -> None:
        cases = [
            ("GET", "/v1/allocations?resource_class=a%00b"),
            ("GET", "/v1/allocations?state=active%00"),
            ("GET", "/v1/nodes?instance_uuid=%00"),
            ("GET", "/v1/nodes?owner=x%00&resource_class=rc"),
            ("GET", "/v1/allocation_capacity?resource_class=%00"),
            ("GET", "/v1/allocations/a%00b"),
            ("DELETE", "/v1/allocations/a%00b"),
            ("GET", "/v1/nodes/a%00b"),
            ("GET", "/v1/nodes/a%00b/allocation"),
            ("PUT", f"/v1/nodes/{self.node}/traits/CUSTOM_%00"),
        ]
        for method, path in cases:
            self._check_refused(self._send(method, path, None),
                                (method, path))

    def test_nothing_was_stored(self) -> None:
        self.test_bodies()
        listed = self.server.request("GET", "/v1/allocations").json()
        self.assertEqual([], listed["allocations"])  # type: ignore[attr-defined]
        node = self.server.request("GET", f"/v1/nodes/{self.node}").json()
        self.assertEqual({}, node["extra"])  # type: ignore[attr-defined]
        self.assertNotIn(  # type: ignore[attr-defined]
            "Traceback", self.server.log())


class SQLiteUnstorableTests(_UnstorableTests, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLUnstorableTests(_UnstorableTests, testtools.TestCase):
    kind = "postgresql"


class MySQLUnstorableTests(_UnstorableTests, testtools.TestCase):
    kind = "mysql"
