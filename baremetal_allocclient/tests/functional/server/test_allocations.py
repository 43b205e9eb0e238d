"""Allocations end to end against the reference server (in-process)."""

from __future__ import annotations

import json
import uuid as uuidlib
from typing import Any

import testtools

from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)


def _rc() -> str:
    return "rc-" + uuidlib.uuid4().hex[:12]


def fault(resp: Any) -> str:
    """The faultstring of an Ironic-style error body."""
    return str(json.loads(resp.json()["error_message"])["faultstring"])


class AllocationTests(testtools.TestCase):
    """One server for the class; every test uses its own resource class."""

    server: InProcessServer

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.server = serve_for_class(cls)

    def allocate(self, **body: Any) -> Any:
        resp = self.server.request("POST", "/v1/allocations", body)
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertEqual("allocating", resp.json()["state"])
        return self.server.wait_allocation(resp.json()["uuid"])

    def test_prefer_wait_answers_with_the_settled_allocation(self) -> None:
        """One round trip instead of a create and polls (RFC 7240)."""
        rc = _rc()
        (node,) = self.server.make_nodes(1, rc)
        answered = {}
        for body, state in (({"resource_class": rc}, "active"),
                            ({"resource_class": _rc()}, "error")):
            resp = self.server.request("POST", "/v1/allocations", body,
                                       headers={"Prefer": "wait=10"})
            self.assertEqual(201, resp.status_code, resp.text)
            self.assertEqual("wait=10", resp.headers["Preference-Applied"])
            created = resp.json()
            self.assertEqual(state, created["state"], created)
            stored = self.server.request(
                "GET", f"/v1/allocations/{created['uuid']}").json()
            self.assertEqual(stored, created)
            answered[state] = created
        self.assertEqual(node["uuid"], answered["active"]["node_uuid"])
        reserved = self.server.request("GET", f"/v1/nodes/{node['uuid']}")
        self.assertEqual(answered["active"]["uuid"],
                         reserved.json()["allocation_uuid"])
        self.assertIn("no available nodes match the resource class",
                      answered["error"]["last_error"])

    def test_prefer_without_a_usable_wait_answers_at_once(self) -> None:
        rc = _rc()
        self.server.make_nodes(1, rc)
        for prefer in ("respond-async, wait=10", "wait=-1", "wait=soon",
                       "return=minimal"):
            resp = self.server.request("POST", "/v1/allocations",
                                       {"resource_class": rc},
                                       headers={"Prefer": prefer})
            self.assertEqual(201, resp.status_code, resp.text)
            self.assertNotIn("Preference-Applied", resp.headers)
            self.assertEqual("allocating", resp.json()["state"], prefer)
            done = self.server.wait_allocation(resp.json()["uuid"])
            self.assertEqual("active", done["state"])
            self.assertEqual(
                204, self.server.request(
                    "DELETE", f"/v1/allocations/{done['uuid']}").status_code)

    def test_happy_path_reserves_and_releases(self) -> None:
        rc = _rc()
        (node,) = self.server.make_nodes(1, rc, traits=["CUSTOM_GPU"])
        alloc = self.allocate(resource_class=rc, traits=["CUSTOM_GPU"],
                              name="happy-" + rc, extra={"a": "b"})
        self.assertEqual("active", alloc["state"], alloc)
        self.assertEqual(node["uuid"], alloc["node_uuid"])
        self.assertIsNone(alloc["last_error"])
        node = self.server.request("GET", f"/v1/nodes/{node['uuid']}").json()
        self.assertEqual(alloc["uuid"], node["allocation_uuid"])
        self.assertEqual(alloc["uuid"], node["instance_uuid"])
        self.assertEqual(["CUSTOM_GPU"], node["instance_info"]["traits"])
        by_node = self.server.request(
            "GET", f"/v1/nodes/{node['uuid']}/allocation").json()
        self.assertEqual(alloc["uuid"], by_node["uuid"])
        listed = self.server.request(
            "GET", f"/v1/allocations?node={node['name'] or node['uuid']}"
            f"&state=active&resource_class={rc}").json()["allocations"]
        self.assertEqual([alloc["uuid"]], [a["uuid"] for a in listed])
        # Ironic 39 answers 500 here (deliberate difference).
        nodes = self.server.request(
            "GET", f"/v1/nodes?fields=uuid,allocation_uuid&resource_class={rc}"
        ).json()["nodes"]
        self.assertEqual([(node["uuid"], alloc["uuid"])],
                         [(n["uuid"], n["allocation_uuid"]) for n in nodes])
        resp = self.server.request(
            "DELETE", f"/v1/allocations/{alloc['name']}")
        self.assertEqual(204, resp.status_code, resp.text)
        node = self.server.request("GET", f"/v1/nodes/{node['uuid']}").json()
        self.assertIsNone(node["allocation_uuid"])
        self.assertIsNone(node["instance_uuid"])

    def test_last_error_names_the_filter(self) -> None:
        rc = _rc()
        other_rc = _rc()
        self.server.make_nodes(1, rc, traits=["CUSTOM_A"], owner="proj-a")
        (other,) = self.server.make_nodes(1, other_rc)
        cases: list[tuple[dict[str, Any], str]] = [
            ({"resource_class": _rc()}, "no available nodes match the "
                                        "resource class"),
            ({"resource_class": rc, "candidate_nodes": [other["uuid"]]},
             "none of the requested nodes are available"),
            # Ironic blames the resource class when the owner empties it.
            ({"resource_class": rc, "owner": "proj-b"},
             "no available nodes match the resource class"),
            ({"resource_class": rc, "traits": ["CUSTOM_B"]},
             "no suitable nodes have the requested traits CUSTOM_B"),
        ]
        for body, expected in cases:
            alloc = self.allocate(**body)
            self.assertEqual("error", alloc["state"], str(body))
            self.assertIn(expected, alloc["last_error"], str(body))
            self.assertIsNone(alloc["node_uuid"])

    def test_owner_matches_owner_or_lessee(self) -> None:
        rc = _rc()
        (node,) = self.server.make_nodes(1, rc, lessee="tenant-x")
        alloc = self.allocate(resource_class=rc, owner="tenant-x")
        self.assertEqual("active", alloc["state"])
        self.assertEqual(node["uuid"], alloc["node_uuid"])

    def test_node_named_like_allocation_goes_first(self) -> None:
        rc = _rc()
        nodes = self.server.make_nodes(3, rc)
        target = nodes[2]["uuid"]
        resp = self.server.request("PATCH", f"/v1/nodes/{target}", [
            {"op": "replace", "path": "/name", "value": "name-" + rc}])
        self.assertEqual(200, resp.status_code, resp.text)
        alloc = self.allocate(resource_class=rc, name="name-" + rc)
        self.assertEqual(target, alloc["node_uuid"])

    def test_deploy_and_undeploy_release_the_allocation(self) -> None:
        rc = _rc()
        (node,) = self.server.make_nodes(1, rc)
        uuid = node["uuid"]
        alloc = self.allocate(resource_class=rc)
        resp = self.server.request(
            "PUT", f"/v1/nodes/{uuid}/states/provision", {"target": "active"})
        self.assertEqual(202, resp.status_code, resp.text)
        self.server.wait_node(uuid, "active")
        resp = self.server.request(
            "DELETE", f"/v1/allocations/{alloc['uuid']}")
        self.assertEqual(409, resp.status_code)
        self.assertIn("because the node is active", fault(resp))
        resp = self.server.request(
            "PATCH", f"/v1/nodes/{uuid}",
            [{"op": "remove", "path": "/instance_uuid"}])
        self.assertEqual(409, resp.status_code)
        resp = self.server.request(
            "PUT", f"/v1/nodes/{uuid}/states/provision",
            {"target": "deleted"})
        self.assertEqual(202, resp.status_code, resp.text)
        node = self.server.wait_node(uuid, "available")
        self.assertIsNone(node["allocation_uuid"])
        self.assertIsNone(node["instance_uuid"])
        self.assertEqual({}, node["instance_info"])
        resp = self.server.request("GET", f"/v1/allocations/{alloc['uuid']}")
        self.assertEqual(404, resp.status_code)

    def test_maintenance_allows_release(self) -> None:
        rc = _rc()
        (node,) = self.server.make_nodes(1, rc)
        uuid = node["uuid"]
        alloc = self.allocate(resource_class=rc)
        self.server.request("PUT", f"/v1/nodes/{uuid}/states/provision",
                            {"target": "active"})
        self.server.wait_node(uuid, "active")
        resp = self.server.request("DELETE", f"/v1/nodes/{uuid}")
        self.assertEqual(409, resp.status_code)
        self.assertIn("is associated with instance", fault(resp))
        self.server.request("PUT", f"/v1/nodes/{uuid}/maintenance",
                            {"reason": "test"})
        resp = self.server.request(
            "PATCH", f"/v1/nodes/{uuid}",
            [{"op": "remove", "path": "/instance_uuid"}])
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertIsNone(resp.json()["allocation_uuid"])
        resp = self.server.request("GET", f"/v1/allocations/{alloc['uuid']}")
        self.assertEqual(404, resp.status_code)

    def test_maintenance_blocks_deploy_but_not_undeploy(self) -> None:
        rc = _rc()
        (node,) = self.server.make_nodes(1, rc)
        uuid = node["uuid"]
        alloc = self.allocate(resource_class=rc)
        self.server.request("PUT", f"/v1/nodes/{uuid}/maintenance")
        resp = self.server.request(
            "PUT", f"/v1/nodes/{uuid}/states/provision", {"target": "active"})
        self.assertEqual(400, resp.status_code)
        self.assertIn("because it's in maintenance mode", fault(resp))
        self.server.request("DELETE", f"/v1/nodes/{uuid}/maintenance")
        self.server.request("PUT", f"/v1/nodes/{uuid}/states/provision",
                            {"target": "active"})
        self.server.wait_node(uuid, "active")
        self.server.request("PUT", f"/v1/nodes/{uuid}/maintenance")
        resp = self.server.request(
            "PUT", f"/v1/nodes/{uuid}/states/provision",
            {"target": "deleted"})
        self.assertEqual(202, resp.status_code, resp.text)
        node = self.server.wait_node(uuid, "available")
        self.assertIsNone(node["allocation_uuid"])
        resp = self.server.request("GET", f"/v1/allocations/{alloc['uuid']}")
        self.assertEqual(404, resp.status_code)

    def test_deleting_node_in_maintenance_deletes_allocation(self) -> None:
        rc = _rc()
        (node,) = self.server.make_nodes(1, rc)
        alloc = self.allocate(resource_class=rc)
        uuid = node["uuid"]
        self.server.request("PUT", f"/v1/nodes/{uuid}/maintenance")
        resp = self.server.request("DELETE", f"/v1/nodes/{uuid}")
        self.assertEqual(204, resp.status_code, resp.text)
        resp = self.server.request("GET", f"/v1/allocations/{alloc['uuid']}")
        self.assertEqual(404, resp.status_code)

    def test_allocation_uuid_is_read_only(self) -> None:
        (node,) = self.server.make_nodes(1, _rc())
        resp = self.server.request(
            "PATCH", f"/v1/nodes/{node['uuid']}",
            [{"op": "replace", "path": "/allocation_uuid",
              "value": str(uuidlib.uuid4())}])
        self.assertEqual(400, resp.status_code)
        self.assertIn("Cannot patch /allocation_uuid", fault(resp))

    def test_backfill(self) -> None:
        rc = _rc()
        deployed, idle = self.server.make_nodes(2, rc)
        uuid = deployed["uuid"]
        self.server.request("PUT", f"/v1/nodes/{uuid}/states/provision",
                            {"target": "active"})
        self.server.wait_node(uuid, "active")
        # Ironic answers 500 and keeps an ``error`` row: here 409/400 and
        # nothing is stored (deliberate difference).
        for node, body, status in (
            (idle["uuid"], {}, 409),
            (uuid, {"resource_class": _rc()}, 400),
        ):
            name = "bf-" + uuidlib.uuid4().hex[:8]
            resp = self.server.request(
                "POST", "/v1/allocations", {"node": node, "name": name,
                                            **body})
            self.assertEqual(status, resp.status_code, resp.text)
            self.assertIn("Cannot backfill an allocation", fault(resp))
            resp = self.server.request("GET", f"/v1/allocations/{name}")
            self.assertEqual(404, resp.status_code)
        resp = self.server.request("POST", "/v1/allocations", {"node": uuid})
        self.assertEqual(201, resp.status_code, resp.text)
        alloc = resp.json()
        self.assertEqual("active", alloc["state"])
        self.assertEqual(rc, alloc["resource_class"])
        node = self.server.request("GET", f"/v1/nodes/{uuid}").json()
        self.assertEqual(alloc["uuid"], node["allocation_uuid"])
        self.assertEqual(alloc["uuid"], node["instance_uuid"])

    def test_update_allocation(self) -> None:
        alloc = self.allocate(resource_class=_rc(), name="upd-" + _rc())
        resp = self.server.request(
            "PATCH", f"/v1/allocations/{alloc['uuid']}",
            [{"op": "add", "path": "/extra/k", "value": "v"},
             {"op": "remove", "path": "/name"}])
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual({"k": "v"}, resp.json()["extra"])
        self.assertIsNone(resp.json()["name"])
        resp = self.server.request(
            "PATCH", f"/v1/allocations/{alloc['uuid']}",
            [{"op": "replace", "path": "/resource_class", "value": "x"}])
        self.assertEqual(400, resp.status_code)

    def test_version_gates(self) -> None:
        cases: list[tuple[str, str, Any, str, int]] = [
            ("GET", "/v1/allocations", None, "1.51", 404),
            ("POST", "/v1/allocations", {"resource_class": "x"}, "1.51",
             405),
            ("DELETE", "/v1/allocations/x", None, "1.51", 405),
            ("PATCH", "/v1/allocations/x", [], "1.56", 405),
            ("POST", "/v1/allocations",
             {"resource_class": "x", "owner": "o"}, "1.59", 406),
            ("GET", "/v1/allocations?owner=o", None, "1.59", 406),
            ("GET", "/v1/allocations", None, "1.999", 406),
            ("GET", "/v1/allocations", None, "2.0", 406),
            ("GET", "/v1/allocations", None, "bogus", 406),
        ]
        for method, path, body, version, status in cases:
            resp = self.server.request(method, path, body, version=version)
            self.assertEqual(status, resp.status_code,
                             f"{method} {path} {version}")
            self.assertIn("error_message", resp.json())
            self.assertEqual(
                "1.115",
                resp.headers["X-OpenStack-Ironic-API-Maximum-Version"])
        resp = self.server.request("GET", "/v1/allocations")
        self.assertEqual(
            "1.115", resp.headers["X-OpenStack-Ironic-API-Version"])

    def test_pagination_next_link(self) -> None:
        rc = _rc()
        made = {self.allocate(resource_class=rc)["uuid"] for _ in range(3)}
        resp = self.server.request(
            "GET", f"/v1/allocations?resource_class={rc}&limit=2")
        body = resp.json()
        self.assertEqual(2, len(body["allocations"]))
        self.assertTrue(body["next"].startswith(self.server.endpoint + "/v1/"))
        rest = self.server.request(
            "GET", body["next"][len(self.server.endpoint):]).json()
        self.assertNotIn("next", rest)
        seen = {a["uuid"] for a in body["allocations"] + rest["allocations"]}
        self.assertEqual(made, seen)


class PreferWaitCeilingTests(testtools.TestCase):
    """``serve --max-prefer-wait`` bounds how long a POST may be held."""

    def test_the_wait_is_capped_and_then_answers_allocating(self) -> None:
        server = InProcessServer()
        self.addCleanup(server.cleanup)
        # Each allocation waits 3 s before a worker touches it; the POST
        # may only be held for 1 s, so it must answer while allocating.
        server.start("--allocation-delay", "3", "--max-prefer-wait", "1")
        rc = _rc()
        server.make_nodes(1, rc)
        resp = server.request("POST", "/v1/allocations",
                              {"resource_class": rc},
                              headers={"Prefer": "wait=30"})
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertEqual("wait=1", resp.headers["Preference-Applied"])
        self.assertEqual("allocating", resp.json()["state"])
        done = server.wait_allocation(resp.json()["uuid"])
        self.assertEqual("active", done["state"])
