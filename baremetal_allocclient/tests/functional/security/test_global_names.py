"""What a member learns of another project's allocation from its name.

Names and UUIDs of allocations are global, as in Ironic (the decision
and its reason: doc/source/howto/security.rst, "What a name reveals").
So a member reads another project's allocation as if it did not exist
(404), but creating or renaming one with its name, or creating one or a
group member with its UUID, answers 409 "already exists": that the name
or UUID is taken is all it learns; no owner, state or node is named.
Pinned on SQLite, PostgreSQL and MariaDB (MariaDB compares names
exactly too: ``db/collation.py``).
"""

from __future__ import annotations

import json
import uuid
from typing import Any, ClassVar

import requests
import testtools

from baremetal_allocclient.groups import PATH as GROUPS_PATH
from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)
from baremetal_allocclient.tests.functional.security import _support as sup

_GROUPS = {"X-Baremetal-Alloc-Extensions": "groups"}


class _GlobalNames:
    """Mixin; ``kind`` names the database."""

    kind: ClassVar[str]
    server: ClassVar[InProcessServer]
    creds: ClassVar[sup.Credentials]
    rc: ClassVar[str]
    theirs: ClassVar[dict[str, Any]]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        cls.server = serve_for_class(cls, "--db-connections", "4",
                                     kind=cls.kind, http_basic=True)
        cls.creds = cls.server.creds
        cls.rc = "rc-" + uuid.uuid4().hex[:8]
        cls.server.make_nodes(2, cls.rc, owner=sup.PROJECT_A)
        cls.server.make_nodes(2, cls.rc, owner=sup.PROJECT_B)
        # alice's allocation, with a name and a UUID bob is told about.
        created = cls.server.expect(
            201, "POST", "/v1/allocations",
            {"resource_class": cls.rc, "name": "Alices-Host",
             "uuid": str(uuid.uuid4())},
            auth=cls.creds.auth(sup.ALICE))
        cls.theirs = cls.server.wait_allocation(
            created["uuid"], auth=cls.creds.auth(sup.ALICE))
        assert cls.theirs["node_uuid"], cls.theirs

    def _as_bob(self, method: str, path: str, body: Any = None,
                headers: dict[str, str] | None = None) -> requests.Response:
        return self.server.request(method, path, body,
                                   auth=self.creds.auth(sup.BOB),
                                   headers=headers or {})

    def _fault(self, response: requests.Response, status: int) -> str:
        test: Any = self
        test.assertEqual(status, response.status_code, response.text)
        text = json.loads(response.json()["error_message"])["faultstring"]
        for private in (sup.PROJECT_A, self.theirs["node_uuid"], "active",
                        sup.ALICE):
            test.assertNotIn(private, text)
        return str(text)

    def _bob_allocations(self) -> set[str]:
        listed = self._as_bob("GET", "/v1/allocations").json()
        return {a["uuid"] for a in listed["allocations"]}

    def test_reading_it_is_as_if_it_did_not_exist(self) -> None:
        test: Any = self
        for ident in (self.theirs["name"], self.theirs["uuid"]):
            self._fault(self._as_bob("GET", f"/v1/allocations/{ident}"),
                        404)
            self._fault(self._as_bob("DELETE", f"/v1/allocations/{ident}"),
                        404)
        test.assertNotIn(self.theirs["uuid"], self._bob_allocations())

    def test_its_name_and_uuid_are_taken_and_nothing_more_is_said(
        self,
    ) -> None:
        test: Any = self
        before = self._bob_allocations()
        text = self._fault(self._as_bob(
            "POST", "/v1/allocations",
            {"resource_class": self.rc, "name": self.theirs["name"]}), 409)
        test.assertIn("already exists", text)
        text = self._fault(self._as_bob(
            "POST", "/v1/allocations",
            {"resource_class": self.rc, "uuid": self.theirs["uuid"]}), 409)
        test.assertIn("already exists", text)
        # A name differing only in case is another name, on every database.
        other = self.server.expect(
            201, "POST", "/v1/allocations",
            {"resource_class": self.rc, "name": "alices-host"},
            auth=self.creds.auth(sup.BOB))
        test.addCleanup(self._as_bob, "DELETE",
                        f"/v1/allocations/{other['uuid']}")
        text = self._fault(self._as_bob(
            "PATCH", f"/v1/allocations/{other['uuid']}",
            [{"op": "replace", "path": "/name",
              "value": self.theirs["name"]}]), 409)
        test.assertIn("already exists", text)
        test.assertEqual(before | {other["uuid"]}, self._bob_allocations())

    def test_a_group_naming_its_uuid_is_refused_whole(self) -> None:
        test: Any = self
        before = self._bob_allocations()
        response = self._as_bob(
            "POST", GROUPS_PATH,
            {"resource_class": self.rc, "count": 2,
             "uuids": [str(uuid.uuid4()), self.theirs["uuid"]]},
            headers=_GROUPS)
        test.assertIn("already exists", self._fault(response, 409))
        test.assertEqual(before, self._bob_allocations())


class SqliteGlobalNames(_GlobalNames, testtools.TestCase):
    kind = "sqlite"


class PostgresqlGlobalNames(_GlobalNames, testtools.TestCase):
    kind = "postgresql"


class MysqlGlobalNames(_GlobalNames, testtools.TestCase):
    kind = "mysql"
