"""Bad input never yields a 500 on the reference server (property test).

Hypothesis throws arbitrary JSON documents, near-miss allocation bodies,
arbitrary JSON patches, query strings and raw bytes at the allocation and
node endpoints.  Whatever comes in, the answer is below 500 and every
error carries Ironic's error document with a non-empty message.  Real
Ironic 39 fails this (measured by pointing this class at it: malformed
JSON -> 500 "Expecting value ...", a patch operation without "value" on
some paths -> 500 "'value'", some raw bodies -> 400 with an empty
description), so it runs against the reference target only.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import requests
import testtools
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from baremetal_allocclient.tests.functional import targets

_SETTINGS = settings(max_examples=60, derandomize=True, database=None,
                     deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])

_SCALARS = (st.none() | st.booleans() | st.integers()
            | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(max_size=300))
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=20), inner, max_size=4),
    max_leaves=12)
_FIELDS = ("resource_class", "traits", "candidate_nodes", "name", "uuid",
           "extra", "node", "owner")
# Bodies close to valid ones: known fields with arbitrary values.
_NEAR_MISS = st.dictionaries(st.sampled_from(_FIELDS), _JSON, max_size=5)
_PATCH = st.lists(st.fixed_dictionaries(
    {"op": st.sampled_from(["add", "replace", "remove", "move", "x"]),
     "path": st.sampled_from(["/name", "/extra", "/extra/a", "/uuid",
                              "/resource_class", "/", "", "/a/b/c"])},
    optional={"value": _JSON}), max_size=3)
_QUERY = st.dictionaries(
    st.sampled_from(["state", "resource_class", "node", "owner", "fields",
                     "limit", "marker", "sort_key", "sort_dir"]),
    st.text(max_size=40), max_size=4)


class TestBadInputReference(testtools.TestCase):
    """The reference server answers garbage with 4xx and a message."""

    target: targets.Target
    node: str
    allocation: str

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.target = targets.reference_target()
        rc = targets.unique("rc")
        (node,) = cls.target.make_nodes(1, rc,
                                        name_prefix=targets.unique("node"))
        cls.node = node["uuid"]
        created = cls.target.expect(201, "POST", "/v1/allocations",
                                    {"resource_class": rc})
        cls.allocation = cls.target.wait_allocation(created["uuid"])["uuid"]

    def check(self, response: requests.Response) -> None:
        """Below 500; an error has Ironic's document and a message."""
        self.assertLess(response.status_code, 500,
                        f"{response.request.method} "
                        f"{response.request.path_url}: {response.text}")
        if response.status_code >= 400:
            body = response.json()
            inner = json.loads(body["error_message"])
            self.assertTrue(inner.get("faultstring")
                            or inner.get("description"), body)

    @_SETTINGS
    @given(body=_JSON)
    def test_any_json_as_allocation_body(self, body: Any) -> None:
        self.check(self.target.request(
            "POST", "/v1/allocations", data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"}))

    @_SETTINGS
    @given(body=_NEAR_MISS)
    def test_near_miss_allocation_bodies(self, body: dict[str, Any]
                                         ) -> None:
        response = self.target.request("POST", "/v1/allocations", body)
        self.check(response)
        if response.status_code == 201:
            self.target.wait_allocation(response.json()["uuid"])

    @_SETTINGS
    @given(raw=st.binary(max_size=200))
    def test_raw_bytes(self, raw: bytes) -> None:
        for method, path in (("POST", "/v1/allocations"),
                             ("PATCH", f"/v1/allocations/{self.allocation}"),
                             ("POST", "/v1/nodes")):
            self.check(self.target.request(
                method, path, data=raw,
                headers={"Content-Type": "application/json"}))

    @_SETTINGS
    @given(patch=_PATCH | _JSON)
    def test_any_allocation_patch(self, patch: Any) -> None:
        self.check(self.target.request(
            "PATCH", f"/v1/allocations/{self.allocation}", patch))

    @_SETTINGS
    @given(query=_QUERY)
    def test_any_list_query(self, query: dict[str, str]) -> None:
        self.check(self.target.request("GET", "/v1/allocations",
                                       params=query))

    @_SETTINGS
    @given(body=_JSON, ident=st.text(min_size=1, max_size=60))
    def test_node_endpoints(self, body: Any, ident: str) -> None:
        quoted = urllib.parse.quote(ident, safe="")
        self.check(self.target.request("GET", f"/v1/nodes/{quoted}"))
        self.check(self.target.request(
            "GET", f"/v1/nodes/{quoted}/allocation"))
        self.check(self.target.request(
            "GET", f"/v1/allocations/{quoted}"))
        self.check(self.target.request(
            "PUT", f"/v1/nodes/{self.node}/traits", body))
        self.check(self.target.request(
            "PUT", f"/v1/nodes/{self.node}/states/power", body))
