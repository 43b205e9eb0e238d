"""The constraints extension on the wire, against a real server process:
opt-in only, advertised, explained, in ``last_error`` and in capacity;
shards and conductor groups from the enroll inventory."""

from __future__ import annotations

import json
import uuid as uuidlib
from typing import Any

import testtools

from baremetal_allocclient.constraints import (
    Constraints,
    Op,
    property_constraint,
)
from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)
from baremetal_allocclient.v1.client import Client

_EXT = {"X-Baremetal-Alloc-Extensions": "constraints"}
_BIG = {"key": "cpus", "min": 16}


def _rc() -> str:
    return "rc-" + uuidlib.uuid4().hex[:12]


def fault(resp: Any) -> str:
    """The faultstring of an Ironic-style error body."""
    return str(json.loads(resp.json()["error_message"])["faultstring"])


class ConstraintsExtensionTests(testtools.TestCase):
    """One server for the class; every test uses its own resource class."""

    server: InProcessServer

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.server = serve_for_class(cls)

    def nodes(self, rc: str, *cpus: int) -> list[Any]:
        return [self.server.make_nodes(1, rc, properties={"cpus": n})[0]
                for n in cpus]

    def post(self, body: dict[str, Any], headers: dict[str, str] | None
             = None) -> Any:
        return self.server.request("POST", "/v1/allocations", body,
                                   headers={"Prefer": "wait=10",
                                            **(headers or {})})

    def test_without_the_header_the_body_is_checked_as_ironic_does(
            self) -> None:
        rc = _rc()
        resp = self.post({"resource_class": rc,
                          "constraints": {"properties": [_BIG]}})
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertIn("Additional properties are not allowed", fault(resp))
        self.assertIn("constraints", fault(resp))

    def test_the_extension_is_advertised_in_v1(self) -> None:
        doc = self.server.request("GET", "/v1").json()
        entry = doc["extensions"]["constraints"]
        self.assertEqual(1, entry["version"])
        self.assertEqual("X-Baremetal-Alloc-Extensions", entry["header"])
        self.assertTrue(entry["explain"].endswith("/v1/allocation_explain"))
        self.assertIs(True, entry["funnel_in_last_error"])

    def test_constrained_allocation_takes_only_a_matching_node(self) -> None:
        rc = _rc()
        _small, big = self.nodes(rc, 4, 32)
        resp = self.post({"resource_class": rc,
                          "constraints": {"properties": [_BIG]}}, _EXT)
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertEqual(("active", big["uuid"]),
                         (resp.json()["state"], resp.json()["node_uuid"]))

    def test_failed_allocation_carries_the_funnel_in_one_line(self) -> None:
        rc = _rc()
        self.nodes(rc, 4)
        resp = self.post({"resource_class": rc,
                          "constraints": {"properties": [_BIG]}}, _EXT)
        error = resp.json()["last_error"]
        self.assertEqual("error", resp.json()["state"])
        self.assertNotIn("\n", error)
        self.assertIn(
            "no suitable nodes match the constraint property cpus>=16; "
            "funnel: resource_class 1 > available 1 > not_in_maintenance 1 "
            "> power_state 1 > unreserved 1 > property:cpus>=16 0 "
            "(emptied by property:cpus>=16)", error)

    def test_plain_failures_read_as_ironic_unless_opted_in(self) -> None:
        rc = _rc()
        self.nodes(rc, 4)
        resp = self.post({"resource_class": rc, "traits": ["CUSTOM_X"]})
        uuid = resp.json()["uuid"]
        ironic = (f"Failed to process allocation {uuid}: no suitable "
                  f"nodes have the requested traits CUSTOM_X")
        self.assertEqual(ironic + ".", resp.json()["last_error"])
        opted = self.server.request("GET", f"/v1/allocations/{uuid}",
                                    headers=_EXT).json()["last_error"]
        self.assertEqual(
            ironic + "; funnel: resource_class 1 > available 1 > "
            "not_in_maintenance 1 > power_state 1 > unreserved 1 > "
            "traits 0 (emptied by traits).", opted)

    def test_explain_is_one_request_and_reserves_nothing(self) -> None:
        rc = _rc()
        self.nodes(rc, 4, 32)
        resp = self.server.request("POST", "/v1/allocation_explain", {
            "resource_class": rc,
            "constraints": {"properties": [_BIG]}})
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual({"resource_class": rc, "candidates": 1,
                          "first_empty": None,
                          "order": {"order": "first_fit"}}, {
            k: v for k, v in resp.json().items() if k != "funnel"})
        self.assertEqual(
            {"step": "property:cpus>=16", "count": 1},
            resp.json()["funnel"][-1])
        listed = self.server.request(
            "GET", f"/v1/allocations?resource_class={rc}").json()
        self.assertEqual([], listed["allocations"])

    def test_bad_constraints_are_clear_400s(self) -> None:
        rc = _rc()
        for constraints, fragment in (
            ({"properties": [{"key": "cpus", "min": "eight"}]},
             "is not of type 'number'"),
            ({"properties": [{"key": "cpus"}]},
             "does not have enough properties"),
            ({"require_node_name": True}, "require_node_name needs"),
            ({"forbidden_traits": ["lowercase"]}, "lowercase"),
            ({"colour": "red"}, "Additional properties"),
        ):
            resp = self.post({"resource_class": rc,
                              "constraints": constraints}, _EXT)
            self.assertEqual(400, resp.status_code, resp.text)
            self.assertIn(fragment, fault(resp))

    def test_capacity_counts_only_matching_nodes(self) -> None:
        rc = _rc()
        self.nodes(rc, 4, 32, 64)
        query = json.dumps({"properties": [_BIG]})
        resp = self.server.request(
            "GET", f"/v1/allocation_capacity?resource_class={rc}"
                   f"&constraints={query}")
        self.assertEqual(200, resp.status_code, resp.text)
        (row,) = resp.json()["capacity"]
        self.assertEqual((2, 2), (row["total"], row["free"]))
        resp = self.server.request(
            "GET", "/v1/allocation_capacity?constraints=nope")
        self.assertEqual(400, resp.status_code)
        # The SDK sends the same query.
        client = Client.from_endpoint(self.server.endpoint)
        (row,) = client.get_allocation_capacity(rc, constraints=Constraints(
            properties=(property_constraint("cpus", Op.MIN, 64),)))
        self.assertEqual(1, row["total"])

    def test_shard_patch_below_1_82_needs_the_extension_header(self) -> None:
        rc = _rc()
        (node,) = self.nodes(rc, 8)
        patch = [{"op": "add", "path": "/shard", "value": "s9"}]
        path = f"/v1/nodes/{node['uuid']}"
        resp = self.server.request("PATCH", path, patch, version="1.81")
        self.assertEqual(406, resp.status_code, resp.text)
        resp = self.server.request("PATCH", path, patch, version="1.81",
                                   headers=_EXT)
        self.assertEqual(200, resp.status_code, resp.text)
        resp = self.server.request("PATCH", path, patch)  # 1.82 and later
        self.assertEqual(200, resp.status_code, resp.text)
        resp = self.post({"resource_class": rc,
                          "constraints": {"shard": "s9"}}, _EXT)
        self.assertEqual(node["uuid"], resp.json()["node_uuid"])


class InventoryConstraintTests(testtools.TestCase):
    """``enroll`` takes shard, conductor_group and properties."""

    def test_enrolled_shard_group_and_properties_select(self) -> None:
        server = InProcessServer()
        self.addCleanup(server.cleanup)
        server.start(inventory={
            f"n{i}": {"driver": "fake-hardware", "resource_class": "big",
                      "shard": f"s{i % 2}",
                      "conductor_group": "G1" if i < 2 else "g2",
                      "properties": {"memory_mb": 1024 * (i + 1)}}
            for i in range(4)})
        resp = server.request("POST", "/v1/allocation_explain", {
            "resource_class": "big", "constraints": {
                "shard": "s1", "conductor_group": "g1",
                "properties": [{"key": "memory_mb", "min": 2048}]}})
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual(
            [4, 4, 4, 4, 4, 3, 1, 1],
            [step["count"] for step in resp.json()["funnel"]])
