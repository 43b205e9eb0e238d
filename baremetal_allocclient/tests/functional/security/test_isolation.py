"""Project isolation between two members, with Ironic's status codes."""

from __future__ import annotations

import uuid
from typing import Any

import testtools

from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)
from baremetal_allocclient.tests.functional.security import _support as sup


class IsolationTests(testtools.TestCase):
    """alice (proj-a) and bob (proj-b) share one server and admin."""

    server: InProcessServer
    creds: sup.Credentials
    rc: str
    a_nodes: list[Any]
    b_nodes: list[Any]
    leased: Any

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.server = serve_for_class(cls, http_basic=True)
        cls.creds = cls.server.creds
        cls.rc = "rc-" + uuid.uuid4().hex[:8]
        cls.a_nodes = cls.server.make_nodes(2, cls.rc,
                                            owner=sup.PROJECT_A)
        cls.b_nodes = cls.server.make_nodes(3, cls.rc,
                                            owner=sup.PROJECT_B)
        cls.leased = cls.server.make_nodes(
            1, cls.rc, owner=sup.PROJECT_B, lessee=sup.PROJECT_A)[0]
        cls.server.make_nodes(2, cls.rc)  # nobody's

    @property
    def alice(self) -> tuple[str, str]:
        return self.creds.auth(sup.ALICE)

    @property
    def bob(self) -> tuple[str, str]:
        return self.creds.auth(sup.BOB)

    def _allocate(self, auth: tuple[str, str], **body: Any) -> Any:
        created = self.server.expect(
            201, "POST", "/v1/allocations",
            {"resource_class": self.rc, **body}, auth=auth)
        return self.server.wait_allocation(created["uuid"], auth=auth)

    def _cleanup_allocation(self, ident: str) -> None:
        self.addCleanup(self.server.request, "DELETE",
                        f"/v1/allocations/{ident}")

    # -- create --------------------------------------------------------------

    def test_create_fills_the_member_project_as_owner(self) -> None:
        allocation = self._allocate(self.alice)
        self._cleanup_allocation(allocation["uuid"])
        self.assertEqual(sup.PROJECT_A, allocation["owner"])
        self.assertEqual("active", allocation["state"])

    def test_create_with_own_project_as_owner(self) -> None:
        allocation = self._allocate(self.alice, owner=sup.PROJECT_A)
        self._cleanup_allocation(allocation["uuid"])
        self.assertEqual(sup.PROJECT_A, allocation["owner"])

    def test_create_with_foreign_owner_is_403_and_stores_nothing(
        self,
    ) -> None:
        name = "foreign-" + uuid.uuid4().hex[:8]
        response = self.server.request(
            "POST", "/v1/allocations",
            {"resource_class": self.rc, "owner": sup.PROJECT_B,
             "name": name}, auth=self.alice)
        self.assertEqual(403, response.status_code, response.text)
        self.assertIn(sup.PROJECT_B, response.json()["error_message"])
        self.server.expect(404, "GET", f"/v1/allocations/{name}")

    def test_admin_may_create_for_any_project(self) -> None:
        allocation = self._allocate(self.creds.auth(sup.ADMIN),
                                    owner=sup.PROJECT_B)
        self._cleanup_allocation(allocation["uuid"])
        self.assertEqual(sup.PROJECT_B, allocation["owner"])
        self.server.expect(200, "GET", f"/v1/allocations/{allocation['uuid']}",
                           auth=self.bob)
        self.server.expect(404, "GET", f"/v1/allocations/{allocation['uuid']}",
                           auth=self.alice)

    # -- node selection ------------------------------------------------------

    def test_selection_offers_only_owned_or_leased_nodes(self) -> None:
        mine = {n["uuid"] for n in self.a_nodes} | {self.leased["uuid"]}
        got = []
        for _ in range(len(mine)):
            allocation = self._allocate(self.alice)
            self._cleanup_allocation(allocation["uuid"])
            self.assertEqual("active", allocation["state"], allocation)
            got.append(allocation["node_uuid"])
        self.assertEqual(mine, set(got))
        # Everything alice may use is taken; bob's and unowned nodes are
        # still free, yet alice's next allocation fails.
        failed = self._allocate(self.alice)
        self._cleanup_allocation(failed["uuid"])
        self.assertEqual("error", failed["state"])
        # Ironic's words; opted in, the funnel counts only alice's nodes.
        reason = (f"Failed to process allocation {failed['uuid']}: no "
                  f"available nodes match the resource class {self.rc}")
        self.assertEqual(reason + ".", failed["last_error"])
        opted = self.server.expect(
            200, "GET", f"/v1/allocations/{failed['uuid']}",
            auth=self.alice,
            headers={"X-Baremetal-Alloc-Extensions": "constraints"})
        self.assertEqual(
            reason + "; funnel: resource_class 3 > available 3 > "
            "not_in_maintenance 3 > power_state 3 > unreserved 0 > owner 0 "
            "(emptied by unreserved).", opted["last_error"])

    def test_foreign_candidate_nodes_do_not_exist_for_a_member(self) -> None:
        foreign = self.b_nodes[0]
        for ident in (foreign["uuid"],):
            response = self.server.request(
                "POST", "/v1/allocations",
                {"resource_class": self.rc, "candidate_nodes": [ident]},
                auth=self.alice)
            self.assertEqual(400, response.status_code, response.text)
            self.assertIn("cannot be found", response.json()["error_message"])

    def test_backfill_of_a_foreign_node_is_refused(self) -> None:
        response = self.server.request(
            "POST", "/v1/allocations", {"node": self.b_nodes[1]["uuid"]},
            auth=self.alice)
        self.assertEqual(400, response.status_code, response.text)

    def test_a_uuid_in_use_by_a_foreign_node_names_nothing(self) -> None:
        node = self.server.make_nodes(1, "rc-" + uuid.uuid4().hex[:8],
                                      owner=sup.PROJECT_B)[0]
        instance = str(uuid.uuid4())
        self.server.expect(200, "PATCH", f"/v1/nodes/{node['uuid']}", [
            {"op": "add", "path": "/instance_uuid", "value": instance}])
        response = self.server.request(
            "POST", "/v1/allocations",
            {"resource_class": self.rc, "uuid": instance}, auth=self.alice)
        # Created and failed, as in Ironic; the foreign node is not named.
        self.assertEqual(201, response.status_code, response.text)
        self.assertEqual("error", response.json()["state"])
        self.assertIn(f"Instance {instance} is already associated with a "
                      "node", response.json()["last_error"])
        self.assertNotIn(node["uuid"], response.text)
        self.assertNotIn(node["name"] or node["uuid"], response.text)

    # -- list, get, update, delete -------------------------------------------

    def test_list_get_update_delete_of_other_projects(self) -> None:
        # Not on the node bob owns but alice leases: alice sees that one.
        theirs = self._allocate(
            self.bob, name="bob-" + uuid.uuid4().hex[:8],
            candidate_nodes=[n["uuid"] for n in self.b_nodes])
        self._cleanup_allocation(theirs["uuid"])
        mine = self._allocate(self.alice)
        self._cleanup_allocation(mine["uuid"])

        listed = self.server.expect(200, "GET", "/v1/allocations",
                                    auth=self.alice)["allocations"]
        self.assertIn(mine["uuid"], [a["uuid"] for a in listed])
        self.assertEqual({sup.PROJECT_A}, {a["owner"] for a in listed})
        everything = self.server.expect(200, "GET", "/v1/allocations")
        self.assertIn(theirs["uuid"],
                      [a["uuid"] for a in everything["allocations"]])
        self.assertEqual(403, self.server.request(
            "GET", "/v1/allocations?owner=" + sup.PROJECT_B,
            auth=self.alice).status_code)
        # bob's node is not even a valid filter for alice.
        self.server.expect(
            400, "GET", f"/v1/allocations?node={theirs['node_uuid']}",
            auth=self.alice)
        by_node = self.server.expect(
            200, "GET", f"/v1/allocations?node={theirs['node_uuid']}",
            auth=self.bob)["allocations"]
        self.assertEqual([theirs["uuid"]], [a["uuid"] for a in by_node])

        for ident in (theirs["uuid"], theirs["name"]):
            path = f"/v1/allocations/{ident}"
            self.server.expect(404, "GET", path, auth=self.alice)
            self.server.expect(404, "PATCH", path,
                               [{"op": "add", "path": "/extra/x",
                                 "value": "y"}], auth=self.alice)
            self.server.expect(404, "DELETE", path, auth=self.alice)
        node_path = f"/v1/nodes/{theirs['node_uuid']}"
        self.server.expect(404, "GET", node_path, auth=self.alice)
        self.assertIn(self.server.request(
            "GET", node_path + "/allocation", auth=self.alice).status_code,
            (400, 404))
        self.assertIn(self.server.request(
            "DELETE", node_path + "/allocation",
            auth=self.alice).status_code, (400, 404))
        # Untouched, and still usable by its owner.
        after = self.server.expect(200, "GET",
                                   f"/v1/allocations/{theirs['uuid']}",
                                   auth=self.bob)
        self.assertEqual(theirs["node_uuid"], after["node_uuid"])
        self.assertEqual({}, after["extra"])
        updated = self.server.expect(
            200, "PATCH", f"/v1/allocations/{theirs['uuid']}",
            [{"op": "add", "path": "/extra/x", "value": "y"}], auth=self.bob)
        self.assertEqual({"x": "y"}, updated["extra"])
        self.server.expect(204, "DELETE", f"/v1/allocations/{theirs['uuid']}",
                           auth=self.bob)

    def test_member_releases_own_allocation_through_the_node(self) -> None:
        mine = self._allocate(self.alice)
        self._cleanup_allocation(mine["uuid"])
        path = f"/v1/nodes/{mine['node_uuid']}/allocation"
        self.assertEqual(mine["uuid"], self.server.expect(
            200, "GET", path, auth=self.alice)["uuid"])
        self.server.expect(204, "DELETE", path, auth=self.alice)
        node = self.server.expect(200, "GET", f"/v1/nodes/{mine['node_uuid']}",
                                  auth=self.alice)
        self.assertIsNone(node["allocation_uuid"])

    def test_node_list_shows_only_owned_or_leased(self) -> None:
        nodes = self.server.expect(
            200, "GET", f"/v1/nodes?resource_class={self.rc}&fields=uuid",
            auth=self.alice)["nodes"]
        expected = {n["uuid"] for n in self.a_nodes} | {self.leased["uuid"]}
        self.assertEqual(expected, {n["uuid"] for n in nodes})
        detail = self.server.expect(
            200, "GET", f"/v1/nodes/detail?resource_class={self.rc}",
            auth=self.bob)["nodes"]
        self.assertEqual(
            {n["uuid"] for n in self.b_nodes} | {self.leased["uuid"]},
            {n["uuid"] for n in detail})
        self.server.expect(404, "GET", f"/v1/nodes/{self.b_nodes[0]['uuid']}",
                           auth=self.alice)
        self.server.expect(200, "GET", f"/v1/nodes/{self.leased['uuid']}",
                           auth=self.alice)
        admin = self.server.expect(
            200, "GET", f"/v1/nodes?resource_class={self.rc}")["nodes"]
        self.assertEqual(8, len(admin))
