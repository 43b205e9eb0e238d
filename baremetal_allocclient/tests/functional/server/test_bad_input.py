"""Bad input gets a 400 (or 404/406/409) with a message, never a 500."""

from __future__ import annotations

import json
import uuid as uuidlib
from typing import Any

import requests
import testtools

from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)

_HEADERS = {
    "X-OpenStack-Ironic-API-Version": "latest",
    "Content-Type": "application/json",
}


class BadInputTests(testtools.TestCase):
    """Table-driven: each case names the request and the expected words."""

    server: InProcessServer
    node: dict[str, Any]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.server = serve_for_class(cls)
        cls.node = cls.server.make_nodes(1, "rc-bad-input")[0]
        resp = cls.server.request(
            "POST", "/v1/allocations",
            {"resource_class": "rc-none", "name": "existing"})
        assert resp.status_code == 201, resp.text

    def send(self, method: str, path: str, raw: str) -> requests.Response:
        return requests.request(
            method, self.server.endpoint + path, data=raw.encode(),
            headers=_HEADERS, timeout=30,
        )

    def check(self, resp: requests.Response, status: int, words: str,
              case: Any) -> None:
        self.assertEqual(status, resp.status_code, f"{case}: {resp.text}")
        body = json.loads(resp.json()["error_message"])
        self.assertIn(words, body["faultstring"], str(case))
        self.assertEqual("Client", body["faultcode"])

    def test_raw_bodies(self) -> None:
        node = self.node["uuid"]
        cases = [
            ("POST", "/v1/allocations", "{bad json", 400, "Invalid JSON"),
            ("POST", "/v1/allocations", "[1, 2]", 400, "is not of type"),
            ("POST", "/v1/allocations", "", 400, "is not of type"),
            ("POST", "/v1/nodes", "{\"driver\": ", 400, "Invalid JSON"),
            ("PATCH", f"/v1/nodes/{node}", "nope", 400, "Invalid JSON"),
            ("PATCH", "/v1/allocations/existing", "{}", 400,
             "is not of type 'array'"),
            ("PUT", f"/v1/nodes/{node}/states/power", "{]", 400,
             "Invalid JSON"),
            ("PUT", f"/v1/nodes/{node}/traits", "\xff", 400,
             "Invalid JSON"),
        ]
        for method, path, raw, status, words in cases:
            self.check(self.send(method, path, raw), status, words,
                       (method, path, raw))

    def test_allocation_bodies(self) -> None:
        cases: list[tuple[Any, int, str]] = [
            ({"resource_class": 5}, 400, "is not of type"),
            ({"resource_class": "x", "unknown": 1}, 400,
             "'unknown' was unexpected"),
            ({"resource_class": "x" * 81}, 400, "is too long"),
            ({"resource_class": "x", "name": "bad name"}, 400,
             "invalid name"),
            ({"resource_class": "x", "name": "n" * 256}, 400,
             "invalid name"),
            ({"resource_class": "x", "traits": ["lowercase"]}, 400,
             "'lowercase' is not valid under any of the given schemas"),
            ({"resource_class": "x", "traits": "CUSTOM_A"}, 400,
             "is not of type"),
            ({"resource_class": "x", "traits": ["C" * 256]}, 400,
             "is too long"),
            ({"resource_class": "x", "uuid": "not-a-uuid"}, 400,
             "Expected UUID"),
            ({"resource_class": "x", "candidate_nodes": ["missing"]}, 400,
             "Nodes cannot be found: missing"),
            ({"resource_class": "x", "extra": []}, 400, "is not of type"),
            ({}, 400, "resource_class field is mandatory"),
            ({"resource_class": "x", "name": "existing"}, 409,
             "already exists"),
            ({"node": "missing-node"}, 400, "could not be found"),
        ]
        for body, status, words in cases:
            resp = self.server.request("POST", "/v1/allocations", body)
            self.check(resp, status, words, body)
        listed = self.server.request("GET", "/v1/allocations").json()
        self.assertEqual(["existing"],
                         [a["name"] for a in listed["allocations"]])

    def test_query_parameters(self) -> None:
        cases = [
            ("/v1/allocations?limit=abc", "Expected an integer"),
            ("/v1/allocations?limit=0", "Limit must be positive"),
            ("/v1/allocations?sort_key=bogus", "invalid field for sorting"),
            ("/v1/allocations?sort_dir=up", "is not one of"),
            ("/v1/allocations?fields=uuid,bogus", "'bogus' is not one of"),
            ("/v1/allocations?marker=nope", "is not a 'uuid'"),
            ("/v1/allocations?node=missing", "could not be found"),
            ("/v1/nodes?fields=bogus", "are not valid"),
            ("/v1/nodes?provision_state=bogus", "is not valid"),
            ("/v1/nodes?maintenance=maybe", "Unrecognized value"),
            ("/v1/nodes?associated=maybe", "Unrecognized value"),
            ("/v1/nodes/bad%20name", "Expected a logical name or UUID"),
        ]
        for path, words in cases:
            self.check(self.server.request("GET", path), 400, words, path)

    def test_node_requests(self) -> None:
        node = self.node["uuid"]
        cases: list[tuple[str, str, Any, int, str]] = [
            ("POST", "/v1/nodes", {"driver": "ipmi"}, 400,
             "No valid host was found"),
            ("POST", "/v1/nodes", {"driver": "fake-hardware", "foo": 1},
             400, "'foo' was unexpected"),
            ("POST", "/v1/nodes", {"driver": "fake-hardware",
                                   "uuid": "bad"}, 400, "Expected UUID"),
            ("POST", "/v1/nodes", {"driver": "fake-hardware",
                                   "name": "a b"}, 400, "invalid name"),
            ("PATCH", f"/v1/nodes/{node}",
             [{"op": "replace", "path": "/instance_uuid", "value": "x"}],
             400, "Expected UUID"),
            ("PATCH", f"/v1/nodes/{node}",
             [{"op": "replace", "path": "/maintenance", "value": "often"}],
             400, "Invalid maintenance: Unrecognized value 'often'"),
            ("PATCH", f"/v1/nodes/{node}",
             [{"op": "replace", "path": "/maintenance", "value": 3}],
             400, "is not of type"),
            ("PATCH", f"/v1/nodes/{node}",
             [{"op": "remove", "path": "/extra/missing"}], 400,
             "Invalid patch"),
            ("PUT", f"/v1/nodes/{node}/states/provision",
             {"target": "fly"}, 400, "can not be performed"),
            ("PUT", f"/v1/nodes/{node}/states/power", {"target": "dim"},
             400, "can not be performed"),
            ("PUT", f"/v1/nodes/{node}/traits", {"traits": ["bad trait"]},
             400, "'bad trait' is not valid under any of the given schemas"),
            ("PUT", f"/v1/nodes/{node}/traits/lower", None, 400,
             "'lower' is not valid under any of the given schemas"),
            ("DELETE", f"/v1/nodes/{node}/traits/CUSTOM_NOT_THERE", None,
             404, "doesn't have a trait"),
            ("GET", f"/v1/nodes/{uuidlib.uuid4()}", None, 404,
             "could not be found"),
        ]
        for method, path, body, status, words in cases:
            resp = self.server.request(method, path, body)
            self.check(resp, status, words, (method, path, body))

    def test_no_tracebacks_logged(self) -> None:
        self.test_raw_bodies()
        self.test_allocation_bodies()
        self.assertNotIn("Traceback", self.server.log())
