"""Who sees what and which node matches: the same answer on SQLite,
PostgreSQL and MariaDB (issue 20, items 1 and 2).

Text is compared exactly (case, accents, trailing spaces) on every
database.  On MariaDB's default collation a member of ``Team-A`` saw
project ``team-a``'s nodes and allocations and was reserved onto its
node, ``rc1`` matched ``RC1``, a constraint ``cpu_arch = x86_64``
matched ``"x86_64 "`` and property keys ``cpus`` and ``"cpus "`` were a
false 409.  Each class runs a real server over a scratch database.
"""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

import testtools

from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)
from baremetal_allocclient.tests.functional.security import _support as sup

#: alice's project and bob's: they differ only in case.
UPPER, LOWER = "Team-A", "team-a"
_EXT = {"X-Baremetal-Alloc-Extensions": "constraints"}


def _hex() -> str:
    return uuid.uuid4().hex[:10]


class _ExactComparisonTests:
    """Mixin; ``kind`` names the database."""

    kind: ClassVar[str]
    server: ClassVar[InProcessServer]
    creds: ClassVar[sup.Credentials]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        cls.server = serve_for_class(cls, "--db-connections", "4",
                                     kind=cls.kind, http_basic=True,
                                     projects=(UPPER, LOWER))
        cls.creds = cls.server.creds

    @property
    def alice(self) -> tuple[str, str]:
        """A member of ``Team-A``."""
        return self.creds.auth(sup.ALICE)

    @property
    def bob(self) -> tuple[str, str]:
        """A member of ``team-a``."""
        return self.creds.auth(sup.BOB)

    def allocate(self, body: dict[str, Any], **kwargs: Any) -> Any:
        """Create and wait until the allocation settled."""
        created = self.server.expect(201, "POST", "/v1/allocations", body,
                                     **kwargs)
        return self.server.wait_allocation(created["uuid"],
                                           auth=kwargs.get("auth"))

    def assert_no_node_for(self, body: dict[str, Any],
                           **kwargs: Any) -> None:
        """The allocation fails: no node it asks for exists."""
        test: Any = self
        allocation = self.allocate(body, **kwargs)
        test.assertEqual(("error", None),
                         (allocation["state"], allocation["node_uuid"]),
                         allocation)

    # -- item 1: project isolation ---------------------------------------

    def test_member_does_not_see_a_case_variant_project(self) -> None:
        test: Any = self
        rc = "rc-" + _hex()
        owned = self.server.make_nodes(1, rc, owner=LOWER)[0]
        leased = self.server.make_nodes(1, rc, owner="x-" + _hex(),
                                        lessee=LOWER)[0]
        theirs = self.allocate({"resource_class": "none-" + _hex()},
                               auth=self.bob)
        for path, key, ident in (
            ("/v1/nodes", "nodes", owned["uuid"]),
            ("/v1/nodes", "nodes", leased["uuid"]),
            ("/v1/allocations", "allocations", theirs["uuid"]),
        ):
            seen = {item["uuid"] for item in self.server.expect(
                200, "GET", path, auth=self.alice)[key]}
            test.assertNotIn(ident, seen, path)
            self.server.expect(404, "GET", f"{path}/{ident}",
                               auth=self.alice)
            test.assertIn(ident, {item["uuid"] for item in self.server.expect(
                200, "GET", path, auth=self.bob)[key]})

    def test_member_is_not_reserved_onto_a_case_variant_owner(self) -> None:
        test: Any = self
        rc = "rc-" + _hex()
        node = self.server.make_nodes(1, rc, owner=LOWER)[0]
        self.assert_no_node_for({"resource_class": rc}, auth=self.alice)
        test.assertIsNone(self.server.expect(
            200, "GET", f"/v1/nodes/{node['uuid']}")["allocation_uuid"])
        mine = self.allocate({"resource_class": rc}, auth=self.bob)
        test.assertEqual(node["uuid"], mine["node_uuid"])

    # -- item 2: matching ------------------------------------------------

    def test_resource_class_is_case_exact(self) -> None:
        rc = "rc-" + _hex()
        self.server.make_nodes(1, rc.upper())
        self.assert_no_node_for({"resource_class": rc})

    def test_property_constraint_is_space_exact(self) -> None:
        rc = "rc-" + _hex()
        self.server.make_nodes(1, rc, properties={"cpu_arch": "x86_64 "})
        self.assert_no_node_for(
            {"resource_class": rc, "constraints": {"properties": [
                {"key": "cpu_arch", "eq": "x86_64"}]}},
            headers=_EXT)

    def test_property_constraint_is_case_exact(self) -> None:
        rc = "rc-" + _hex()
        self.server.make_nodes(1, rc, properties={"cpu_arch": "X86_64"})
        self.assert_no_node_for(
            {"resource_class": rc, "constraints": {"properties": [
                {"key": "cpu_arch", "eq": "x86_64"}]}},
            headers=_EXT)

    def test_shard_constraint_is_case_exact(self) -> None:
        rc = "rc-" + _hex()
        shard = "Shard-" + _hex()
        self.server.make_nodes(1, rc, shard=shard)
        self.assert_no_node_for(
            {"resource_class": rc, "constraints": {"shard": shard.lower()}},
            headers=_EXT)

    def test_property_keys_differing_by_a_trailing_space(self) -> None:
        test: Any = self
        node = self.server.expect(201, "POST", "/v1/nodes", {
            "driver": "fake-hardware",
            "properties": {"cpus": 4, "cpus ": 8, "Cpus": 16}})
        test.assertEqual({"cpus": 4, "cpus ": 8, "Cpus": 16},
                         node["properties"])

    def test_traits_differing_only_in_case_are_refused(self) -> None:
        """Traits never reach the database in lower case: Ironic's schema
        takes upper-case custom traits only."""
        rc = "rc-" + _hex()
        node = self.server.make_nodes(1, rc)[0]
        self.server.expect(400, "PUT",
                           f"/v1/nodes/{node['uuid']}/traits/CUSTOM_a")
        self.server.expect(400, "POST", "/v1/allocations", {
            "resource_class": rc, "traits": ["CUSTOM_a"]})

    # -- names (Ironic on MySQL: case-insensitive) ------------------------

    def test_node_names_are_case_exact(self) -> None:
        test: Any = self
        name = "Node-" + _hex()
        upper, lower = (self.server.expect(201, "POST", "/v1/nodes", {
            "driver": "fake-hardware", "name": each})
            for each in (name, name.lower()))
        for each, node in ((name, upper), (name.lower(), lower)):
            test.assertEqual(node["uuid"], self.server.expect(
                200, "GET", f"/v1/nodes/{each}")["uuid"])
        listed = self.server.expect(200, "GET", "/v1/nodes?fields=name")
        test.assertEqual(1, sum(1 for each in listed["nodes"]
                                if each["name"] == name))

    def test_allocation_names_are_case_exact(self) -> None:
        test: Any = self
        name = "Alloc-" + _hex()
        made = [self.server.expect(201, "POST", "/v1/allocations", {
            "resource_class": "none-" + _hex(), "name": each})
            for each in (name, name.lower())]
        test.assertEqual(2, len({each["uuid"] for each in made}))
        for each, allocation in ((name, made[0]), (name.lower(), made[1])):
            test.assertEqual(allocation["uuid"], self.server.expect(
                200, "GET", f"/v1/allocations/{each}")["uuid"])


class SQLiteExactComparisonTests(_ExactComparisonTests, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLExactComparisonTests(_ExactComparisonTests,
                                     testtools.TestCase):
    kind = "postgresql"


class MariaDBExactComparisonTests(_ExactComparisonTests, testtools.TestCase):
    kind = "mysql"
