"""Numbers of any size get a clear answer and cost nothing (issue 52).

Before, a ``Prefer: wait`` of 400 digits answered 500 after storing the
allocation, which then held a worker slot for good (three such creates
made every later create a 503 on ``--workers 1 --pending 2``); an API
version of 5,000 digits, a queue ``timeout`` of 500 digits and an
admin's ``properties/cpus`` of 400 digits answered 500.  Every number
is now read by ``server/api/numbers.py`` where it is parsed: a wait of
any length is capped, anything else out of range is a 4xx naming where
it stood, and a refused request stores nothing.  On SQLite, PostgreSQL
and MariaDB.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, ClassVar
from urllib.parse import quote

import requests
import testtools

from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)

NINES = "9" * 400
_JSON = {"Content-Type": "application/json",
         "X-OpenStack-Ironic-API-Version": "latest"}
_LEAKS = ("Traceback", "Exceeds the limit", "int_max_str_digits",
          "OverflowError", "sqlalchemy")


class _OversizedNumbers:
    """Mixin; ``kind`` names the database."""

    kind: ClassVar[str]
    server: ClassVar[InProcessServer]
    rc: ClassVar[str]
    node: ClassVar[dict[str, Any]]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        cls.server = serve_for_class(
            cls, "--workers", "1", "--pending", "2", "--max-prefer-wait",
            "3", "--db-connections", "4", kind=cls.kind)
        cls.rc = "rc-" + uuid.uuid4().hex[:8]
        cls.node = cls.server.make_nodes(
            1, cls.rc, properties={"cpus": 8})[0]

    def _send(self, method: str, path: str, raw: str,
              **headers: str) -> requests.Response:
        return requests.request(method, self.server.endpoint + path,
                                data=raw.encode(), timeout=30,
                                headers={**_JSON, **headers})

    def _refused(self, response: requests.Response, status: int,
                 *words: str) -> None:
        test: Any = self
        test.assertEqual(status, response.status_code, response.text[:500])
        inner = json.loads(response.json()["error_message"])
        text = inner.get("faultstring") or inner.get("description")
        for word in words:
            test.assertIn(word, text)
        for leak in _LEAKS:
            test.assertNotIn(leak, response.text)
        test.assertLess(len(response.text), 1000)  # no number echoed whole

    def _names(self) -> set[str]:
        listed = self.server.expect(200, "GET", "/v1/allocations")
        return {a["name"] for a in listed["allocations"]}

    def test_a_wait_of_any_length_is_capped_and_holds_no_slot(self) -> None:
        test: Any = self
        names = []
        for _ in range(4):  # more than --workers 1 --pending 2 hold
            name = "wait-" + uuid.uuid4().hex[:8]
            response = self._send(
                "POST", "/v1/allocations",
                json.dumps({"resource_class": self.rc, "name": name}),
                Prefer=f"wait={NINES}")
            test.assertEqual(201, response.status_code, response.text)
            test.assertEqual("wait=3",
                             response.headers.get("Preference-Applied"))
            test.assertNotEqual("allocating", response.json()["state"])
            names.append(name)
            self.server.expect(204, "DELETE", f"/v1/allocations/{name}")
        test.assertEqual(3, self.server.assembly.workers.free_slots())

    def test_an_api_version_of_5000_digits_is_406(self) -> None:
        before = self._names()
        for version in ("1." + "9" * 5000, "9" * 5000 + ".1"):
            response = self._send(
                "POST", "/v1/allocations",
                json.dumps({"resource_class": self.rc, "name": "v"}),
                **{"X-OpenStack-Ironic-API-Version": version})
            self._refused(response, 406, "X-OpenStack-Ironic-API-Version",
                          "out of range")
        test: Any = self
        test.assertEqual(before, self._names())

    def test_a_queue_timeout_of_500_digits_is_400(self) -> None:
        before = self._names()
        response = self._send(
            "POST", "/v1/allocations",
            f'{{"resource_class": "{self.rc}", "name": "q", "queue": '
            f'{{"timeout": {"9" * 500}}}}}',
            **{"X-Baremetal-Alloc-Extensions": "queue"})
        self._refused(response, 400, "/queue/timeout", "out of range")
        test: Any = self
        test.assertEqual(before, self._names())

    def test_a_node_property_of_400_digits_is_400(self) -> None:
        path = f"/v1/nodes/{self.node['uuid']}"
        response = self._send(
            "PATCH", path,
            '[{"op": "replace", "path": "/properties/cpus", '
            f'"value": {NINES}}}]')
        self._refused(response, 400, "/0/value", "out of range")
        test: Any = self
        node = self.server.expect(200, "GET", path)
        test.assertEqual({"cpus": 8}, node["properties"])

    def test_integers_past_the_conversion_limit_name_their_field(
        self,
    ) -> None:
        before = self._names()
        huge = "1" + "0" * 5000  # more digits than int() reads
        response = self._send(
            "POST", "/v1/allocations",
            f'{{"resource_class": "{self.rc}", "name": "x", "extra": '
            f'{{"sizes": [1, {huge}]}}}}')
        self._refused(response, 400, "/extra/sizes/1", "out of range")
        test: Any = self
        test.assertEqual(before, self._names())

    def test_query_numbers_of_any_size_are_400(self) -> None:
        response = self._send("GET", f"/v1/allocations?limit={NINES}", "")
        self._refused(response, 400, "limit", "out of range")
        document = quote('{"properties": [{"key": "cpus", "min": '
                         f'{"9" * 350}}}]}}')
        response = self._send(
            "GET", f"/v1/allocation_capacity?constraints={document}", "")
        self._refused(response, 400, "/properties/0/min", "out of range")


class SqliteOversizedNumbers(_OversizedNumbers, testtools.TestCase):
    kind = "sqlite"


class PostgresqlOversizedNumbers(_OversizedNumbers, testtools.TestCase):
    kind = "postgresql"


class MysqlOversizedNumbers(_OversizedNumbers, testtools.TestCase):
    kind = "mysql"
