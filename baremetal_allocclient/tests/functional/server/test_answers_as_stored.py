"""Allocations are answered from the JSON text their rows stored, on
SQLite, PostgreSQL and MariaDB: every answer is byte for byte what
``json.dumps`` writes for its value, and ``extra`` comes back as it was
sent (values, non-ASCII text, key order).

The server copies ``candidate_nodes``, ``extra`` and ``traits`` into its
answers as stored instead of decoding and encoding them again
(``api/json_text.py``); these tests hold that shortcut to the answer a
decoded value would have given, on each database's own ``json`` type.
"""

from __future__ import annotations

import datetime
import json
import operator
from typing import Any, ClassVar

import requests
import sqlalchemy
import testtools

from baremetal_allocclient.server.db.models import Allocation
from baremetal_allocclient.tests.fixtures import inprocess
from baremetal_allocclient.tests.fixtures.inprocess import InProcessServer

RC = "stored-json"
#: Key order that is not sorted, text that ``json.dumps`` escapes, and
#: numbers whose text a database could rewrite.
EXTRA: dict[str, Any] = {
    "zeta": 1,
    "alpha": [1, 2.5, 1e100, -0.0, 2 ** 63 - 1, -(2 ** 63),
              {"z": None, "": True}],
    "caf\u00e9 \u65e5\u672c": "quote \" backslash \\ newline \n "
                              "control \u0001 separator \u2028",
    "nested": {"b": {}, "a": []},
}


class _AnswersAsStored:
    """Mixin; ``kind`` names the database."""

    kind: ClassVar[str]
    db_url: ClassVar[str]
    server: ClassVar[InProcessServer]
    nodes: ClassVar[list[Any]]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        cls.server = inprocess.serve_for_class(cls, kind=cls.kind)
        cls.db_url = cls.server.db_url
        cls.nodes = cls.server.make_nodes(
            3, RC, traits=["CUSTOM_B", "CUSTOM_A"])

    def answer(self, status: int, method: str, path: str,
               body: Any = None) -> Any:
        """A request that must answer ``status`` with a JSON body that is
        byte for byte ``json.dumps`` of its value; that value."""
        test: Any = self
        response: requests.Response = self.server.request(method, path, body)
        test.assertEqual(status, response.status_code, response.text)
        value = json.loads(response.content)
        test.assertEqual(json.dumps(value).encode(), response.content)
        return value

    def assert_extra_as_sent(self, allocation: dict[str, Any],
                             sent: dict[str, Any]) -> None:
        test: Any = self
        test.assertEqual(list(sent.items()),
                         list(allocation["extra"].items()))
        test.assertEqual(json.dumps(sent),
                         json.dumps(allocation["extra"]))

    def test_every_view_of_an_allocation(self) -> None:
        candidates = [n["uuid"] for n in self.nodes[:2]]
        created = self.answer(201, "POST", "/v1/allocations", {
            "resource_class": RC, "name": "stored-json-1",
            "extra": EXTRA, "traits": ["CUSTOM_B", "CUSTOM_A"],
            "candidate_nodes": candidates,
        })
        self.assert_extra_as_sent(created, EXTRA)
        settled = self.server.wait_allocation(created["uuid"])
        test: Any = self
        test.assertEqual("active", settled["state"], settled)
        one = self.answer(200, "GET", f"/v1/allocations/{created['uuid']}")
        self.assert_extra_as_sent(one, EXTRA)
        test.assertEqual(["CUSTOM_B", "CUSTOM_A"], one["traits"])
        test.assertEqual(candidates, one["candidate_nodes"])
        listed = self.answer(200, "GET", "/v1/allocations")["allocations"]
        test.assertIn(one, listed)
        by_node = self.answer(
            200, "GET", f"/v1/nodes/{one['node_uuid']}/allocation")
        test.assertEqual(one, by_node)
        some = self.answer(200, "GET", f"/v1/allocations/{one['uuid']}"
                                       "?fields=uuid,extra,traits")
        test.assertEqual(
            {k: one[k] for k in ("uuid", "extra", "traits", "links")}, some)

        patched_extra = {"y": "\u00fcber", "x": [EXTRA]}
        patched = self.answer(200, "PATCH",
                              f"/v1/allocations/{one['uuid']}",
                              [{"op": "replace", "path": "/extra",
                                "value": patched_extra}])
        self.assert_extra_as_sent(patched, patched_extra)
        again = self.answer(200, "GET", f"/v1/allocations/{one['uuid']}")
        self.assert_extra_as_sent(again, patched_extra)

    def test_defaults_and_pages(self) -> None:
        made = [self.answer(201, "POST", "/v1/allocations",
                            {"resource_class": "none-such"})
                for _ in range(3)]
        test: Any = self
        for each in made:
            test.assertEqual(({}, [], []), (
                each["extra"], each["traits"], each["candidate_nodes"]))
        page = self.answer(200, "GET", "/v1/allocations?limit=2"
                                       "&resource_class=none-such")
        test.assertEqual(2, len(page["allocations"]))
        test.assertIn("next", page)
        for each in page["allocations"]:
            test.assertEqual(({}, [], []), (
                each["extra"], each["traits"], each["candidate_nodes"]))


    def test_timestamps_and_json_nulls(self) -> None:
        # Rows as a read selects them on this database: timestamps with
        # a fraction, with none (Ironic writes no ".000000"), NULL; JSON
        # columns stored as JSON null, answered as their defaults.
        times = {
            "fraction": (datetime.datetime(2026, 1, 2, 3, 4, 5, 6),
                         datetime.datetime(2026, 1, 2, 3, 4, 5, 999999)),
            "whole": (datetime.datetime(2026, 1, 2, 3, 4, 5), None),
        }
        made = {}
        for name in times:
            created = self.answer(201, "POST", "/v1/allocations", {
                "resource_class": "none-such", "name": f"times-{name}"})
            self.server.wait_allocation(created["uuid"])
            made[name] = created["uuid"]
        engine = sqlalchemy.create_engine(self.db_url)
        try:
            with engine.begin() as conn:
                for name, (created_at, updated_at) in times.items():
                    conn.execute(sqlalchemy.update(Allocation).where(
                        Allocation.uuid == made[name]).values(
                        created_at=created_at, updated_at=updated_at))
                conn.execute(sqlalchemy.text(
                    "UPDATE allocations SET extra = 'null', traits = 'null',"
                    " candidate_nodes = 'null' WHERE uuid = :uuid"),
                    {"uuid": made["whole"]})
        finally:
            engine.dispose()
        listed = {a["uuid"]: a for a in self.answer(
            200, "GET", "/v1/allocations?resource_class=none-such"
        )["allocations"]}
        test: Any = self

        def shown(moment: datetime.datetime | None) -> str | None:
            if moment is None:
                return None
            if self.kind == "mysql":  # DATETIME keeps whole seconds
                moment = moment.replace(microsecond=0)
            return moment.isoformat() + "+00:00"

        for name, (created_at, updated_at) in times.items():
            one = self.answer(200, "GET", f"/v1/allocations/{made[name]}")
            test.assertEqual(one, listed[made[name]])
            test.assertEqual((shown(created_at), shown(updated_at)),
                             (one["created_at"], one["updated_at"]))
        test.assertEqual(({}, [], []), operator.itemgetter(
            "extra", "traits", "candidate_nodes")(listed[made["whole"]]))


class SQLiteAnswersAsStored(_AnswersAsStored, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLAnswersAsStored(_AnswersAsStored, testtools.TestCase):
    kind = "postgresql"


class MariaDBAnswersAsStored(_AnswersAsStored, testtools.TestCase):
    kind = "mysql"
