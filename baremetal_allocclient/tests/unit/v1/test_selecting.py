"""Constraints over the wire (requests-mock): the extension's field and
header when the server advertises it; otherwise one paged node listing,
client-side selection, and the survivors as candidate_nodes."""

from __future__ import annotations

from typing import Any
from urllib import parse

from baremetal_allocclient import exceptions
from baremetal_allocclient.constraints import (
    Constraints,
    Op,
    property_constraint,
)
from baremetal_allocclient.tests.unit.v1 import fakes
from baremetal_allocclient.tests.unit.v1.client_case import (
    ALLOCS,
    ClientTestCase,
    E,
)

NODES = E + "/v1/nodes"
WANTED = Constraints(properties=(property_constraint("cpus", Op.MIN, 8),),
                     forbidden_traits=("CUSTOM_GPU",))


def _node(uuid: str, cpus: int, traits: list[str]) -> dict[str, Any]:
    return {"uuid": uuid, "name": f"n-{uuid}", "resource_class": "rc",
            "provision_state": "available", "maintenance": False,
            "power_state": "power off", "instance_uuid": None,
            "properties": {"cpus": cpus}, "traits": traits,
            "conductor_group": "", "owner": None, "lessee": None}


def _query(request: Any) -> dict[str, list[str]]:
    return parse.parse_qs(parse.urlsplit(request.url).query)


class PrefilterTests(ClientTestCase):
    """Against a server without the extension (Ironic)."""

    def setUp(self) -> None:
        super().setUp()
        self.mock.get(E + "/v1", json={"id": "v1"}, headers=self.headers())

    def test_survivors_become_candidates(self) -> None:
        nodes = [_node("a", 16, ["CUSTOM_X"]), _node("b", 4, ["CUSTOM_X"]),
                 _node("c", 32, ["CUSTOM_X", "CUSTOM_GPU"])]
        self.mock.get(NODES, json={"nodes": nodes}, headers=self.headers())
        self.mock.post(ALLOCS, status_code=201, headers=self.headers(),
                       json=fakes.allocation(uuid="u1"))
        self.client.create_allocation("rc", traits=["CUSTOM_X"],
                                      constraints=WANTED)
        listing, post = [r for r in self.mock.request_history
                         if r.path in ("/v1/nodes", "/v1/allocations")]
        query = _query(listing)
        self.assertEqual(["rc"], query["resource_class"])
        self.assertEqual(["available"], query["provision_state"])
        self.assertEqual(["false"], query["maintenance"])
        self.assertIn("properties", query["fields"][0].split(","))
        self.assertEqual(["1000"], query["limit"])
        self.assertEqual({"resource_class": "rc", "traits": ["CUSTOM_X"],
                          "candidate_nodes": ["a"]}, _without_uuid(post))
        self.assertNotIn("X-Baremetal-Alloc-Extensions", post.headers)

    def test_nothing_survives_nothing_is_created(self) -> None:
        self.mock.get(NODES, json={"nodes": [_node("b", 4, [])]},
                      headers=self.headers())
        post = self.mock.post(ALLOCS, status_code=500)
        with self.assertRaises(exceptions.NoMatchingNodes) as caught:
            self.client.create_allocation("rc", constraints=WANTED)
        self.assertFalse(post.called)
        self.assertEqual("property:cpus>=8",
                         caught.exception.funnel["first_empty"])
        self.assertIn("no suitable nodes match the constraint property "
                      "cpus>=8; funnel: ", str(caught.exception))
        listings = [r for r in self.mock.request_history
                    if r.path == "/v1/nodes"]
        # The narrow listing, then the whole resource class to explain.
        self.assertEqual(2, len(listings))
        self.assertNotIn("provision_state", _query(listings[1]))

    def test_explain_from_the_node_list(self) -> None:
        self.mock.get(NODES, json={"nodes": [_node("a", 16, [])]},
                      headers=self.headers())
        doc = self.client.explain("rc", constraints=WANTED)
        self.assertEqual(1, doc["candidates"])
        self.assertEqual("forbidden_traits", doc["funnel"][-2]["step"])

    def test_shard_is_listed_at_1_82(self) -> None:
        self.server_max = "1.90"
        self.mock.get(E + "/v1", json={"id": "v1"}, headers=self.headers())
        nodes = [{**_node("a", 16, []), "shard": "s1"}]
        self.mock.get(NODES, json={"nodes": nodes}, headers=self.headers())
        doc = self.make_client().explain(
            "rc", constraints=Constraints(shard="s1"))
        self.assertEqual(1, doc["candidates"])
        listing = next(r for r in self.mock.request_history
                       if r.path == "/v1/nodes")
        self.assertEqual("1.82",
                         listing.headers["X-OpenStack-Ironic-API-Version"])
        self.assertIn("shard", _query(listing)["fields"][0].split(","))


class ExtensionTests(ClientTestCase):
    """Against a server advertising the constraints extension."""

    def setUp(self) -> None:
        super().setUp()
        self.mock.get(E + "/v1", headers=self.headers(), json={
            "id": "v1", "extensions": {"constraints": {"version": 1}}})

    def test_constraints_travel_with_the_allocation(self) -> None:
        self.mock.post(ALLOCS, status_code=201, headers=self.headers(),
                       json=fakes.allocation(uuid="u1"))
        self.client.create_allocation("rc", constraints=WANTED)
        post = self.mock.last_request
        self.assertEqual("constraints",
                         post.headers["X-Baremetal-Alloc-Extensions"])
        self.assertEqual(
            {"resource_class": "rc", "constraints": {
                "forbidden_traits": ["CUSTOM_GPU"],
                "properties": [{"key": "cpus", "min": 8}]}},
            _without_uuid(post))

    def test_what_the_server_does_not_list_is_chosen_here(self) -> None:
        """A version-1 server listing no ``features`` understands min, eq
        and forbidden traits only: a ``max`` is applied here, over the
        node list, and the create carries the survivors; a server that
        lists ``max`` gets the constraints themselves."""
        self.mock.get(NODES, json={"nodes": [_node("a", 4, []),
                                             _node("b", 16, [])]},
                      headers=self.headers())
        self.mock.post(ALLOCS, status_code=201, headers=self.headers(),
                       json=fakes.allocation(uuid="u1"))
        small = Constraints(properties=(property_constraint("cpus", Op.MAX,
                                                            8),))
        self.client.create_allocation("rc", constraints=small)
        self.assertEqual({"resource_class": "rc", "candidate_nodes": ["a"]},
                         _without_uuid(self.mock.last_request))
        self.mock.get(E + "/v1", headers=self.headers(), json={
            "id": "v1", "extensions": {"constraints": {
                "version": 1, "features": ["eq", "max", "min"]}}})
        client = self.make_client()
        client.create_allocation("rc", constraints=small)
        self.assertEqual(
            {"resource_class": "rc", "constraints": {
                "properties": [{"key": "cpus", "max": 8}]}},
            _without_uuid(self.mock.last_request))

    def test_explain_is_one_request(self) -> None:
        self.mock.post(E + "/v1/allocation_explain", headers=self.headers(),
                       json={"funnel": [{"step": "resource_class",
                                         "count": 0}],
                             "candidates": 0,
                             "first_empty": "resource_class"})
        doc = self.client.explain("rc", constraints=WANTED)
        self.assertEqual("resource_class", doc["first_empty"])
        self.assertEqual(["/v1", "/v1/allocation_explain"],
                         [r.path for r in self.mock.request_history])

    def test_once_discovered_every_allocation_request_opts_in(
            self) -> None:
        """So that last_error carries the funnel (the server sends
        Ironic's text to clients that did not opt in)."""
        self.mock.post(ALLOCS, status_code=201, headers=self.headers(),
                       json=fakes.allocation(uuid="u1"))
        self.mock.get(ALLOCS + "/u1", headers=self.headers(),
                      json=fakes.allocation(uuid="u1"))
        self.client.get_allocation("u1")
        self.client.create_allocation("rc")
        self.assertEqual(
            [("/v1/allocations/u1", "groups, leases"),
             ("/v1/allocations", None)],
            [(r.path, r.headers.get("X-Baremetal-Alloc-Extensions"))
             for r in self.mock.request_history])
        self.assertTrue(self.client.supports_constraints())
        self.client.create_allocation("rc")
        self.client.get_allocation("u1")
        self.assertEqual(
            [("/v1", None), ("/v1/allocations", "constraints"),
             ("/v1/allocations/u1", "constraints, groups, leases")],
            [(r.path, r.headers.get("X-Baremetal-Alloc-Extensions"))
             for r in self.mock.request_history[2:]])

    def test_backfill_refuses_constraints(self) -> None:
        self.assertRaises(exceptions.InvalidArgument,
                          self.client.create_allocation, node="n1",
                          constraints=WANTED)


def _without_uuid(request: Any) -> dict[str, Any]:
    """A create's body without the UUID the client chose (a new random
    one per call, which makes the create safe to repeat)."""
    body: dict[str, Any] = request.json()
    body.pop("uuid")
    return body
