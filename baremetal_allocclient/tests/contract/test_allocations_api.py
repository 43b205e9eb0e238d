"""The Allocation API over plain HTTP, asserted identically on both targets.

These pin the wire contract the real clients rely on: status codes, body
fields, the error document, microversion gating, filters and pagination.
Messages are compared by the fragments Ironic 39 produces (measured on the
real service), so the reference server must word its errors the same way.
"""

from __future__ import annotations

import urllib.parse
import uuid as uuidlib
from typing import Any

from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.functional import targets

_ALLOCATION_FIELDS = {
    "uuid", "name", "state", "resource_class", "traits", "candidate_nodes",
    "node_uuid", "owner", "last_error", "extra", "created_at", "updated_at",
    "links",
}


class AllocationApi(base.ContractMixin):
    """Create, read, update and delete allocations through the HTTP API."""

    def test_create_is_asynchronous_and_reserves_a_node(self) -> None:
        """201 ``allocating`` at once; then ``active`` with the node bound."""
        rc, nodes = self.enroll(2, traits=["CUSTOM_GPU"])
        name = targets.unique("alloc")
        response = self.target.request("POST", "/v1/allocations", {
            "resource_class": rc, "traits": ["CUSTOM_GPU"], "name": name,
            "extra": {"purpose": "contract"}})
        self.assertEqual(201, response.status_code, response.text)
        created = response.json()
        self.assertEqual(_ALLOCATION_FIELDS, set(created))
        self.assertEqual("allocating", created["state"])
        self.assertEqual(None, created["node_uuid"])
        self.assertEqual(name, created["name"])
        self.assertEqual(rc, created["resource_class"])
        self.assertEqual(["CUSTOM_GPU"], created["traits"])
        self.assertEqual([], created["candidate_nodes"])
        self.assertEqual({"purpose": "contract"}, created["extra"])
        self.assertEqual(None, created["owner"])
        self.assertEqual(None, created["last_error"])
        self_link = f"{self.target.endpoint}/v1/allocations/{created['uuid']}"
        self.assertEqual(self_link, response.headers["Location"])
        self.assertIn({"href": self_link, "rel": "self"}, created["links"])
        self.assertEqual(str(uuidlib.UUID(created["uuid"])), created["uuid"])

        done = self.target.wait_allocation(created["uuid"])
        self.assertIn(done["node_uuid"], [n["uuid"] for n in nodes])
        node = self.assertReserved(done)
        # The matched traits are copied into the node's instance_info.
        self.assertEqual(["CUSTOM_GPU"], node["instance_info"]["traits"])
        self.assertEqual("available", node["provision_state"])

    def test_prefer_wait_is_safe_to_send_to_both(self) -> None:
        """``Prefer: wait=10`` (RFC 7240): the reference server answers
        with the settled allocation in the one round trip; Ironic ignores
        the header and answers ``allocating`` as always.  Either way the
        allocation ends ``active`` on a node of the class."""
        rc, nodes = self.enroll(1)
        response = self.target.request(
            "POST", "/v1/allocations", {"resource_class": rc},
            headers={"Prefer": "wait=10"})
        self.assertEqual(201, response.status_code, response.text)
        created = response.json()
        if self.serves_allocations:
            self.assertEqual("wait=10",
                             response.headers["Preference-Applied"])
            self.assertEqual("active", created["state"])
            self.assertEqual(nodes[0]["uuid"], created["node_uuid"])
        else:
            self.assertNotIn("Preference-Applied", response.headers)
            self.assertEqual("allocating", created["state"])
        done = self.target.wait_allocation(created["uuid"])
        self.assertEqual(nodes[0]["uuid"], done["node_uuid"])
        self.assertReserved(done)

    def test_traits_must_be_a_subset_of_the_node_traits(self) -> None:
        """Only the node carrying every requested trait qualifies."""
        rc, (plain,) = self.enroll(1, traits=["CUSTOM_A"])
        _, (rich,) = self.enroll(1, traits=["CUSTOM_A", "CUSTOM_B"],
                                 resource_class=rc)
        done = self.allocate({"resource_class": rc,
                              "traits": ["CUSTOM_A", "CUSTOM_B"]})
        self.assertEqual(rich["uuid"], done["node_uuid"], done)
        self.assertReserved(done)
        self.assertEqual(None, self.target.node(plain["uuid"])
                         ["allocation_uuid"])

    def test_candidate_nodes_by_name_are_stored_as_uuids(self) -> None:
        """Candidates may be names; the allocation lists their UUIDs."""
        rc, nodes = self.enroll(3)
        chosen = nodes[1]
        done = self.allocate({"resource_class": rc,
                              "candidate_nodes": [chosen["name"]]})
        self.assertEqual([chosen["uuid"]], done["candidate_nodes"])
        self.assertEqual(chosen["uuid"], done["node_uuid"])

    def test_node_named_like_the_allocation_is_tried_first(self) -> None:
        """A node whose name equals the allocation's name wins."""
        rc, nodes = self.enroll(3)
        done = self.allocate({"resource_class": rc, "name": nodes[2]["name"]})
        self.assertEqual(nodes[2]["uuid"], done["node_uuid"])

    def test_nodes_in_maintenance_or_reserved_are_skipped(self) -> None:
        """Maintenance and an existing reservation exclude a node."""
        rc, (first, second) = self.enroll(2)
        self.maintenance(first["uuid"], True)
        taken = self.allocate({"resource_class": rc})
        self.assertEqual(second["uuid"], taken["node_uuid"])
        failed = self.allocate({"resource_class": rc})
        self.assertEqual("error", failed["state"])
        self.assertEqual(None, failed["node_uuid"])
        self.assertIn(
            "no available nodes match the resource class " + rc,
            failed["last_error"])

    def test_no_node_of_the_class_gives_error_with_last_error(self) -> None:
        """An empty candidate set is ``error`` with Ironic's wording."""
        rc = targets.unique("rc")
        failed = self.allocate({"resource_class": rc})
        self.assertEqual("error", failed["state"])
        self.assertEqual(None, failed["node_uuid"])
        self.assertIn(f"Failed to process allocation {failed['uuid']}",
                      failed["last_error"])
        self.assertIn(f"no available nodes match the resource class {rc}",
                      failed["last_error"])

    def test_last_error_for_traits_and_candidates(self) -> None:
        """Traits and candidates that empty the set are named (as Ironic)."""
        rc, (node,) = self.enroll(1, traits=["CUSTOM_A"])
        _, (other,) = self.enroll(1)
        by_traits = self.allocate({"resource_class": rc,
                                   "traits": ["CUSTOM_ZZZ"]})
        self.assertEqual("error", by_traits["state"])
        self.assertIn("no suitable nodes have the requested traits "
                      "CUSTOM_ZZZ", by_traits["last_error"])
        by_candidates = self.allocate({"resource_class": rc,
                                       "candidate_nodes": [other["uuid"]]})
        self.assertEqual("error", by_candidates["state"])
        self.assertIn("none of the requested nodes are available and match "
                      f"the resource class {rc}",
                      by_candidates["last_error"])
        self.assertEqual(None, self.target.node(node["uuid"])
                         ["allocation_uuid"])

    def test_owner_matches_node_owner_or_lessee(self) -> None:
        """An owned allocation takes nodes it owns or leases (1.60)."""
        rc, (node,) = self.enroll(1, owner="owner-1", lessee="lessee-1")
        leased = self.allocate({"resource_class": rc, "owner": "lessee-1"})
        self.assertEqual("lessee-1", leased["owner"])
        self.assertEqual(node["uuid"], leased["node_uuid"])
        self.target.expect(204, "DELETE", f"/v1/allocations/{leased['uuid']}")
        owned = self.allocate({"resource_class": rc, "owner": "owner-1"})
        self.assertEqual(node["uuid"], owned["node_uuid"])
        stranger = self.allocate({"resource_class": rc, "owner": "other"})
        self.assertEqual("error", stranger["state"])
        listed = self.target.expect(200, "GET", "/v1/allocations", params={
            "owner": "owner-1", "resource_class": rc})
        self.assertEqual([owned["uuid"]],
                         [a["uuid"] for a in listed["allocations"]])

    def test_get_by_uuid_or_name_with_fields(self) -> None:
        """GET accepts UUID or name; ``fields`` trims the body (+ links)."""
        rc, _ = self.enroll(1)
        name = targets.unique("alloc")
        done = self.allocate({"resource_class": rc, "name": name})
        self.assertEqual(done, self.target.allocation(name))
        trimmed = self.target.expect(
            200, "GET", f"/v1/allocations/{done['uuid']}",
            params={"fields": "uuid,state"})
        self.assertEqual({"uuid", "state", "links"}, set(trimmed))
        self.assertEqual("active", trimmed["state"])
        response = self.target.request(
            "GET", f"/v1/allocations/{done['uuid']}",
            params={"fields": "uuid,bogus"})
        self.assertError(response, 400, "bogus")

    def test_unknown_allocation_is_404(self) -> None:
        """GET, PATCH and DELETE of an unknown allocation answer 404."""
        for ident in (targets.unique("nope"), str(uuidlib.uuid4())):
            for method, body in (("GET", None), ("DELETE", None),
                                 ("PATCH", [{"op": "replace", "path": "/name",
                                             "value": "x"}])):
                response = self.target.request(
                    method, f"/v1/allocations/{ident}", body)
                self.assertError(response, 404,
                                 f"Allocation {ident} could not be found.")

    def test_list_filters(self) -> None:
        """state, resource_class, node (name or UUID) and owner filter."""
        rc, nodes = self.enroll(2, owner="filter-owner")
        active = self.allocate({"resource_class": rc,
                                "candidate_nodes": [nodes[0]["uuid"]]})
        owned = self.allocate({"resource_class": rc, "owner": "filter-owner",
                               "candidate_nodes": [nodes[1]["uuid"]]})
        failed = self.allocate({"resource_class": rc,
                                "traits": ["CUSTOM_MISSING"]})
        self.assertEqual("error", failed["state"])

        def uuids(**params: Any) -> set[str]:
            body = self.target.expect(200, "GET", "/v1/allocations",
                                      params=params)
            return {a["uuid"] for a in body["allocations"]}

        everything = {active["uuid"], owned["uuid"], failed["uuid"]}
        self.assertEqual(everything, uuids(resource_class=rc))
        self.assertEqual({active["uuid"], owned["uuid"]},
                         uuids(resource_class=rc, state="active"))
        self.assertEqual({failed["uuid"]},
                         uuids(resource_class=rc, state="error"))
        self.assertEqual({active["uuid"]}, uuids(node=nodes[0]["uuid"]))
        self.assertEqual({active["uuid"]}, uuids(node=nodes[0]["name"]))
        self.assertEqual({owned["uuid"]},
                         uuids(resource_class=rc, owner="filter-owner"))
        self.assertEqual(set(), uuids(resource_class=targets.unique("rc")))
        response = self.target.request(
            "GET", "/v1/allocations", params={"node": targets.unique("nope")})
        self.assertError(response, 400, "could not be found")

    def test_list_fields(self) -> None:
        """``fields`` limits every listed item; unknown fields are 400."""
        rc, _ = self.enroll(1)
        done = self.allocate({"resource_class": rc, "name":
                              targets.unique("alloc")})
        body = self.target.expect(200, "GET", "/v1/allocations", params={
            "resource_class": rc, "fields": "uuid,name"})
        self.assertEqual(
            [{"uuid": done["uuid"], "name": done["name"]}],
            [{k: v for k, v in a.items() if k != "links"}
             for a in body["allocations"]])
        response = self.target.request("GET", "/v1/allocations",
                                       params={"fields": "bogus"})
        self.assertError(response, 400, "bogus")

    def test_pagination_and_sorting(self) -> None:
        """limit/marker/sort_key/sort_dir and an absolute ``next`` link."""
        rc, _ = self.enroll(1)
        names = [f"{rc}-p{i}" for i in range(5)]
        # One at a time: overlapping allocations on one node can leave real
        # Ironic (SQLite) stuck in "allocating" (see test_differences).
        made = [self.allocate({"resource_class": rc, "name": name})
                for name in names]
        first = self.target.expect(200, "GET", "/v1/allocations", params={
            "resource_class": rc, "limit": 2, "sort_key": "name"})
        self.assertEqual(names[:2],
                         [a["name"] for a in first["allocations"]])
        next_link = first["next"]
        self.assertTrue(next_link.startswith(
            self.target.endpoint + "/v1/allocations?"), next_link)
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(next_link).query)
        self.assertEqual(["2"], query["limit"])
        self.assertEqual(["name"], query["sort_key"])
        self.assertEqual([made[1]["uuid"]], query["marker"])
        # Ironic's next link drops the filters (see test_differences), so
        # the walk re-sends the filter with the marker it got.
        seen = []
        params: dict[str, Any] = {"resource_class": rc, "limit": 2,
                                  "sort_key": "name"}
        while True:
            page = self.target.expect(200, "GET", "/v1/allocations",
                                      params=params)
            seen += [a["name"] for a in page["allocations"]]
            if "next" not in page:
                break
            params["marker"] = page["allocations"][-1]["uuid"]
        self.assertEqual(names, seen)
        after = self.target.expect(200, "GET", "/v1/allocations", params={
            "resource_class": rc, "sort_key": "name",
            "marker": made[2]["uuid"]})
        self.assertEqual(names[3:], [a["name"] for a in after["allocations"]])
        desc = self.target.expect(200, "GET", "/v1/allocations", params={
            "resource_class": rc, "sort_key": "name", "sort_dir": "desc"})
        self.assertEqual(names[::-1],
                         [a["name"] for a in desc["allocations"]])

    def test_pagination_errors(self) -> None:
        """Bad sort keys, directions, limits and markers are rejected."""
        for params, status, fragment in (
                ({"sort_key": "bogus"}, 400, "bogus"),
                ({"sort_key": "traits"}, 400, "traits"),
                ({"sort_dir": "up"}, 400, "up"),
                ({"limit": "x"}, 400, "limit"),
                ({"limit": "-1"}, 400, "Limit must be positive"),
                ({"limit": "0"}, 400, "Limit must be positive"),
                ({"marker": str(uuidlib.uuid4())}, 404, "could not be found"),
        ):
            response = self.target.request("GET", "/v1/allocations",
                                           params=params)
            self.assertError(response, status, fragment)

    def test_patch_name_and_extra(self) -> None:
        """JSON patch on name and extra (1.57); other fields are 400."""
        rc, _ = self.enroll(1)
        done = self.allocate({"resource_class": rc, "extra": {"a": "1"}})
        path = f"/v1/allocations/{done['uuid']}"
        new_name = targets.unique("renamed")
        patched = self.target.expect(200, "PATCH", path, [
            {"op": "add", "path": "/name", "value": new_name},
            {"op": "add", "path": "/extra/b", "value": "2"}])
        self.assertEqual(new_name, patched["name"])
        self.assertEqual({"a": "1", "b": "2"}, patched["extra"])
        self.assertEqual(done["node_uuid"], patched["node_uuid"])
        self.assertEqual(patched, self.target.allocation(new_name))
        patched = self.target.expect(200, "PATCH", path, [
            {"op": "remove", "path": "/name"},
            {"op": "remove", "path": "/extra/a"}])
        self.assertEqual(None, patched["name"])
        self.assertEqual({"b": "2"}, patched["extra"])
        for ops, fragment in (
                ([{"op": "replace", "path": "/resource_class",
                   "value": "x"}], "/resource_class"),
                ([{"op": "replace", "path": "/node_uuid",
                   "value": str(uuidlib.uuid4())}], "/node_uuid"),
                ([{"op": "replace", "path": "/name", "value": "bad name"}],
                 "bad name"),
                ([{"op": "remove", "path": "/extra/missing"}], "missing"),
                ([{"op": "bogus", "path": "/name"}], "bogus"),
        ):
            self.assertError(self.target.request("PATCH", path, ops), 400,
                             fragment)
        self.assertError(
            self.target.request("PATCH", path, {"op": "replace"}), 400)

    def test_patch_to_a_taken_name_is_409(self) -> None:
        """Names stay unique across updates."""
        rc, _ = self.enroll(1)
        taken = targets.unique("taken")
        self.post_allocation({"resource_class": rc, "name": taken})
        other = self.post_allocation({"resource_class": rc})
        response = self.target.request(
            "PATCH", f"/v1/allocations/{other['uuid']}",
            [{"op": "replace", "path": "/name", "value": taken}])
        self.assertError(response, 409,
                         f"An allocation with name {taken} already exists.")

    def test_delete_releases_the_node(self) -> None:
        """DELETE by UUID or name frees the node; a second DELETE is 404."""
        rc, _ = self.enroll(2)
        by_uuid = self.allocate({"resource_class": rc})
        name = targets.unique("alloc")
        by_name = self.allocate({"resource_class": rc, "name": name})
        response = self.target.request(
            "DELETE", f"/v1/allocations/{by_uuid['uuid']}")
        self.assertEqual(204, response.status_code, response.text)
        self.assertEqual(b"", response.content)
        self.assertReleased(by_uuid["node_uuid"], by_uuid["uuid"])
        self.target.expect(204, "DELETE", f"/v1/allocations/{name}")
        self.assertReleased(by_name["node_uuid"], by_name["uuid"])
        self.assertError(
            self.target.request("DELETE", f"/v1/allocations/{name}"), 404,
            "could not be found")
        failed = self.allocate({"resource_class": rc, "traits": ["CUSTOM_X"]})
        self.target.expect(204, "DELETE", f"/v1/allocations/{failed['uuid']}")

    def test_node_allocation_subresource(self) -> None:
        """GET/DELETE /v1/nodes/{node}/allocation."""
        rc, nodes = self.enroll(2)
        done = self.allocate({"resource_class": rc,
                              "candidate_nodes": [nodes[0]["uuid"]]})
        for ident in (nodes[0]["uuid"], nodes[0]["name"]):
            self.assertEqual(done, self.target.expect(
                200, "GET", f"/v1/nodes/{ident}/allocation"))
        trimmed = self.target.expect(
            200, "GET", f"/v1/nodes/{nodes[0]['uuid']}/allocation",
            params={"fields": "uuid,node_uuid"})
        self.assertEqual({"uuid", "node_uuid", "links"}, set(trimmed))
        free = nodes[1]["uuid"]
        self.assertError(
            self.target.request("GET", f"/v1/nodes/{free}/allocation"), 404,
            f"Allocation for node {free} was not found")
        unknown = targets.unique("nope")
        self.assertError(
            self.target.request("GET", f"/v1/nodes/{unknown}/allocation"),
            400, f"Node {unknown} could not be found.")
        self.target.expect(204, "DELETE",
                           f"/v1/nodes/{nodes[0]['name']}/allocation")
        self.assertReleased(nodes[0]["uuid"], done["uuid"])
        self.assertError(
            self.target.request("DELETE",
                                f"/v1/nodes/{nodes[0]['uuid']}/allocation"),
            404, "was not found")

    def test_duplicate_name_and_uuid_are_409(self) -> None:
        """Names and UUIDs are unique."""
        rc, _ = self.enroll(1)
        name = targets.unique("dup")
        first = self.post_allocation({"resource_class": rc, "name": name})
        self.assertError(
            self.target.request("POST", "/v1/allocations",
                                {"resource_class": rc, "name": name}),
            409, f"An allocation with name {name} already exists.")
        self.assertError(
            self.target.request("POST", "/v1/allocations",
                                {"resource_class": rc,
                                 "uuid": first["uuid"]}),
            409, f"An allocation with UUID {first['uuid']} already exists.")
        chosen = str(uuidlib.uuid4())
        created = self.post_allocation({"resource_class": rc,
                                        "uuid": chosen})
        self.assertEqual(chosen, created["uuid"])

    def test_validation_errors_are_400(self) -> None:
        """Bad bodies are 400 with a message naming the problem."""
        rc = targets.unique("rc")
        missing = targets.unique("nope")
        for body, fragment in (
                ({}, "resource_class"),
                ({"resource_class": ""}, "resource_class"),
                ({"resource_class": "x" * 81}, "too long"),
                ({"resource_class": 5}, "5"),
                ({"resource_class": rc, "traits": ["bad trait"]},
                 "bad trait"),
                ({"resource_class": rc, "traits": ["lower"]}, "lower"),
                ({"resource_class": rc, "traits": "CUSTOM_A"}, "CUSTOM_A"),
                ({"resource_class": rc, "candidate_nodes": "x"}, "x"),
                ({"resource_class": rc, "candidate_nodes": [missing]},
                 missing),
                ({"resource_class": rc, "name": "bad name!"}, "bad name!"),
                ({"resource_class": rc, "name": "a" * 300}, "invalid name"),
                ({"resource_class": rc, "extra": "x"}, "x"),
                ({"resource_class": rc, "foo": 1}, "foo"),
                (["x"], "object"),
        ):
            response = self.target.request("POST", "/v1/allocations", body)
            self.assertError(response, 400, fragment)
        listed = self.target.expect(200, "GET", "/v1/allocations",
                                    params={"resource_class": rc})
        self.assertEqual([], listed["allocations"])

    def test_traits_must_be_standard_or_custom(self) -> None:
        """A trait is an os-traits name or CUSTOM_*; others are 400.

        Ironic checks both allocation and node traits against the
        os-traits catalogue: ``HW_CPU_X86_AVX2`` passes, ``FOO_BAR``
        (upper case, but not a known trait) does not.
        """
        rc, (node,) = self.enroll(1)
        self.post_allocation({"resource_class": rc,
                              "traits": ["HW_CPU_X86_AVX2"]})
        self.assertError(self.target.request(
            "POST", "/v1/allocations",
            {"resource_class": rc, "traits": ["FOO_BAR"]}), 400, "FOO_BAR")
        self.assertError(self.target.request(
            "PUT", f"/v1/nodes/{node['uuid']}/traits",
            {"traits": ["FOO_BAR"]}), 400, "FOO_BAR")
        self.assertEqual([], self.target.node(node["uuid"])["traits"])


class VersionGating(base.ContractMixin):
    """Microversion negotiation and the gates of allocation features."""

    def test_version_headers(self) -> None:
        """Every answer carries the min/max/version headers."""
        response = self.target.request("GET", "/v1/allocations",
                                       version="1.52")
        self.assertEqual(200, response.status_code, response.text)
        self.assertEqual("1.52", response.headers[
            "X-OpenStack-Ironic-API-Version"])
        self.assertEqual("1.1", response.headers[
            "X-OpenStack-Ironic-API-Minimum-Version"])
        maximum = response.headers["X-OpenStack-Ironic-API-Maximum-Version"]
        self.assertGreaterEqual(tuple(int(p) for p in maximum.split(".")),
                                (1, 60))
        latest = self.target.request("GET", "/v1/allocations")
        self.assertEqual(maximum,
                         latest.headers["X-OpenStack-Ironic-API-Version"])
        root = self.target.expect(200, "GET", "/", version=None)
        self.assertEqual(maximum, root["default_version"]["version"])
        self.assertEqual("v1", root["default_version"]["id"])

    def test_version_above_maximum_is_406(self) -> None:
        """A minor version above the maximum is refused everywhere.

        Ironic words it "Version 1.999 was requested but the minor version
        is not supported by this service. The supported version range is:
        [1.1, 1.115]." (its maximum in place of 1.115), on ``/`` as well.
        """
        for path in ("/v1/allocations", "/v1", "/"):
            response = self.target.request("GET", path, version="1.999")
            self.assertError(
                response, 406, "Version 1.999 was requested but the minor "
                "version is not supported by this service. The supported "
                "version range is: [1.1, ")
        for bad in ("abc", "1.52.1"):
            response = self.target.request("GET", "/v1/allocations",
                                           version=bad)
            self.assertError(response, 406, "Invalid value for "
                             "X-OpenStack-Ironic-API-Version header")

    def test_allocations_need_1_52(self) -> None:
        """Below 1.52: 404 for GET, 405 for POST/PATCH/DELETE."""
        rc, nodes = self.enroll(1)
        done = self.allocate({"resource_class": rc})
        path = f"/v1/allocations/{done['uuid']}"
        for method, url, body, status in (
                ("GET", "/v1/allocations", None, 404),
                ("GET", path, None, 404),
                ("POST", "/v1/allocations", {"resource_class": rc}, 405),
                ("DELETE", path, None, 405),
        ):
            response = self.target.request(method, url, body,
                                           version="1.51")
            self.assertError(response, status,
                             "The API version does not allow allocations")
        response = self.target.request(
            "GET", f"/v1/nodes/{nodes[0]['uuid']}/allocation",
            version="1.51")
        self.assertEqual(404, response.status_code, response.text)
        # The allocation is untouched by the refused DELETE.
        self.assertEqual("active", self.target.allocation(done["uuid"])
                         ["state"])

    def test_patch_needs_1_57(self) -> None:
        """Updating allocations appeared in 1.57."""
        rc, _ = self.enroll(1)
        done = self.post_allocation({"resource_class": rc})
        response = self.target.request(
            "PATCH", f"/v1/allocations/{done['uuid']}",
            [{"op": "add", "path": "/name", "value": "x"}], version="1.56")
        self.assertError(response, 405,
                         "The API version does not allow updating "
                         "allocations")

    def test_backfill_needs_1_58(self) -> None:
        """``node`` in the body is an unknown field before 1.58."""
        _, (node,) = self.enroll(1)
        response = self.target.request(
            "POST", "/v1/allocations", {"node": node["uuid"]},
            version="1.57")
        self.assertError(response, 400, "node")

    def test_owner_needs_1_60(self) -> None:
        """``owner`` (body, filter, field) is 406/400 before 1.60."""
        rc = targets.unique("rc")
        self.assertEqual(406, self.target.request(
            "POST", "/v1/allocations", {"resource_class": rc, "owner": "o"},
            version="1.59").status_code)
        self.assertEqual(406, self.target.request(
            "GET", "/v1/allocations", params={"owner": "o"},
            version="1.59").status_code)
        done = self.post_allocation({"resource_class": rc}, version="1.52")
        old = self.target.expect(200, "GET",
                                 f"/v1/allocations/{done['uuid']}",
                                 version="1.59")
        self.assertEqual(_ALLOCATION_FIELDS - {"owner"}, set(old))
        response = self.target.request(
            "GET", f"/v1/allocations/{done['uuid']}",
            params={"fields": "owner"}, version="1.52")
        self.assertError(response, 400, "owner")


class IronicLastError(base.ContractMixin):
    """A client that did not opt into the extensions (no
    ``X-Baremetal-Alloc-Extensions``) reads ``last_error`` exactly as
    Ironic writes it, whichever step of the selection left no node."""

    def assertLastError(self, failed: dict[str, Any], reason: str) -> None:
        self.assertEqual("error", failed["state"])
        self.assertEqual(
            f"Failed to process allocation {failed['uuid']}: {reason}.",
            failed["last_error"])
        self.assertEqual(failed["last_error"], self.target.expect(
            200, "GET", f"/v1/allocations/{failed['uuid']}")["last_error"])

    def test_no_node_of_the_resource_class(self) -> None:
        rc = targets.unique("rc")
        self.assertLastError(self.allocate({"resource_class": rc}),
                             f"no available nodes match the resource class "
                             f"{rc}")

    def test_owner_that_owns_no_node(self) -> None:
        """Ironic filters the owner in its first query and blames the
        resource class."""
        rc, _ = self.enroll(1, owner="someone")
        self.assertLastError(
            self.allocate({"resource_class": rc, "owner": "stranger"}),
            f"no available nodes match the resource class {rc}")

    def test_candidates_that_do_not_match(self) -> None:
        rc, _ = self.enroll(1)
        _, (other,) = self.enroll(1)
        self.assertLastError(
            self.allocate({"resource_class": rc,
                           "candidate_nodes": [other["uuid"]]}),
            f"none of the requested nodes are available and match the "
            f"resource class {rc}")

    def test_trait_that_no_node_has(self) -> None:
        rc, _ = self.enroll(1, traits=["CUSTOM_A"])
        self.assertLastError(
            self.allocate({"resource_class": rc, "traits": ["CUSTOM_ZZZ"]}),
            "no suitable nodes have the requested traits CUSTOM_ZZZ")

    def test_candidate_without_the_trait_blames_the_traits(self) -> None:
        """Two nodes of one class, only the second with CUSTOM_X; asking
        for CUSTOM_X on the first: the candidates pass, the traits do
        not (issue 20, item 8)."""
        rc, (first,) = self.enroll(1)
        self.enroll(1, traits=["CUSTOM_X"], resource_class=rc)
        self.assertLastError(
            self.allocate({"resource_class": rc, "traits": ["CUSTOM_X"],
                           "candidate_nodes": [first["name"]]}),
            "no suitable nodes have the requested traits CUSTOM_X")


globals().update(targets.per_target(AllocationApi))
globals().update(targets.per_target(VersionGating))
globals().update(targets.per_target(IronicLastError))
