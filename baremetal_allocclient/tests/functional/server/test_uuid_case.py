"""UUIDs are compared and stored in lower case on every database.

``A1B2…`` and ``a1b2…`` name the same allocation or node.  Before, they
were two allocations on PostgreSQL and SQLite (case-sensitive
comparison) and a conflict on MariaDB (case-insensitive collation).
"""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

import testtools

from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)


class _UuidCaseTests:
    """Mixin; ``kind`` names the database."""

    kind: ClassVar[str]
    server: ClassVar[InProcessServer]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        cls.server = serve_for_class(cls, "--db-connections", "4",
                                     kind=cls.kind)

    def expect(self, status: int, method: str, path: str,
               body: Any = None) -> Any:
        resp = self.server.request(method, path, body)
        test: Any = self
        test.assertEqual(status, resp.status_code,
                         f"{method} {path} {body}: {resp.text}")
        return resp.json() if resp.content else None

    def test_allocation_uuid(self) -> None:
        test: Any = self
        lower = str(uuid.uuid4())
        upper = lower.upper()
        created = self.expect(201, "POST", "/v1/allocations",
                              {"resource_class": "rc-none", "uuid": upper})
        test.assertEqual(lower, created["uuid"])
        test.assertTrue(created["links"][0]["href"].endswith(lower))
        self.expect(409, "POST", "/v1/allocations",
                    {"resource_class": "rc-none", "uuid": lower})
        self.expect(409, "POST", "/v1/allocations",
                    {"resource_class": "rc-none", "uuid": upper})
        for ident in (upper, lower, lower.replace("-", "").upper()):
            got = self.expect(200, "GET", f"/v1/allocations/{ident}")
            test.assertEqual(lower, got["uuid"])
        listed = self.expect(200, "GET", "/v1/allocations")["allocations"]
        test.assertEqual([lower], [a["uuid"] for a in listed
                                   if a["uuid"].lower() == lower])
        self.expect(204, "DELETE", f"/v1/allocations/{upper}")
        self.expect(404, "GET", f"/v1/allocations/{lower}")

    def test_node_uuids_and_filters(self) -> None:
        test: Any = self
        rc = "rc-" + uuid.uuid4().hex[:8]
        node_lower = str(uuid.uuid4())
        instance = str(uuid.uuid4())
        (created,) = self.server.make_nodes(1, rc, uuid=node_lower.upper())
        test.assertEqual(node_lower, created["uuid"])
        self.expect(409, "POST", "/v1/nodes", {
            "driver": "fake-hardware", "uuid": node_lower})
        got = self.expect(200, "GET", f"/v1/nodes/{node_lower.upper()}")
        test.assertEqual(node_lower, got["uuid"])
        # Candidates and the node filter, given in upper case.
        alloc = self.expect(201, "POST", "/v1/allocations", {
            "resource_class": rc, "candidate_nodes": [node_lower.upper()]})
        test.assertEqual([node_lower], alloc["candidate_nodes"])
        done = self.server.wait_allocation(alloc["uuid"])
        test.assertEqual(("active", node_lower),
                         (done["state"], done["node_uuid"]), done)
        by_node = self.expect(
            200, "GET", f"/v1/allocations?node={node_lower.upper()}")
        test.assertEqual([alloc["uuid"]],
                         [a["uuid"] for a in by_node["allocations"]])
        self.expect(204, "DELETE",
                    f"/v1/nodes/{node_lower.upper()}/allocation")
        # instance_uuid, set and filtered in upper case.
        patched = self.expect(200, "PATCH", f"/v1/nodes/{node_lower}", [
            {"op": "add", "path": "/instance_uuid",
             "value": instance.upper()}])
        test.assertEqual(instance, patched["instance_uuid"])
        found = self.expect(
            200, "GET", f"/v1/nodes?instance_uuid={instance.upper()}")
        test.assertEqual([node_lower], [n["uuid"] for n in found["nodes"]])
        # That instance UUID in upper case is still the node's: the
        # allocation fails as in Ironic.
        failed = self.expect(201, "POST", "/v1/allocations",
                             {"resource_class": rc, "uuid": instance.upper()})
        test.assertEqual(("error", instance), (failed["state"],
                                               failed["uuid"]))
        test.assertIn(f"Instance {instance} is already associated",
                      failed["last_error"])


class SQLiteUuidCaseTests(_UuidCaseTests, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLUuidCaseTests(_UuidCaseTests, testtools.TestCase):
    kind = "postgresql"


class MySQLUuidCaseTests(_UuidCaseTests, testtools.TestCase):
    kind = "mysql"
