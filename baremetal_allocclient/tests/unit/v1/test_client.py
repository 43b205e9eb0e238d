"""HTTP-level tests of the v1 Client with requests-mock.

Each test pins down what goes over the wire (method, path, query, headers,
body) and how answers are parsed, without a server.  Time is a FakeClock, so
nothing really sleeps.
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
import uuid as uuidlib
from typing import Any
from urllib import parse

import fixtures
import requests
import requests_mock
import testtools
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import fixture as ks_fixture
from keystoneauth1 import session as ks_session
from requests_mock.contrib import fixture as rm_fixture

from baremetal_allocclient import exceptions, groups, leases
from baremetal_allocclient.tests.unit.v1 import fakes
from baremetal_allocclient.v1 import Allocation, Client, Node, RetryPolicy

E = fakes.ENDPOINT
ALLOCS = E + "/v1/allocations"


def _query(request: Any) -> dict[str, list[str]]:
    return parse.parse_qs(parse.urlsplit(request.url).query)


class ClientTestCase(testtools.TestCase):
    """A client on a plain session, a fake clock and a request mock."""

    server_max = "1.73"

    def setUp(self) -> None:
        super().setUp()
        self.mock = self.useFixture(rm_fixture.Fixture())
        self.clock = fakes.FakeClock()
        self.client = self.make_client()

    def make_client(self, **kwargs: Any) -> Client:
        adapter = ks_adapter.Adapter(
            ks_session.Session(), service_type="baremetal",
            endpoint_override=kwargs.pop("endpoint", E))
        return Client(adapter, _clock=self.clock, _sleep=self.clock.sleep,
                      **kwargs)

    def headers(self, **extra: str) -> dict[str, str]:
        headers = fakes.version_headers(high=self.server_max)
        headers.update(extra)
        return headers

    @property
    def history(self) -> list[Any]:
        return self.mock.request_history

    def sent_versions(self) -> list[str | None]:
        return [r.headers.get("X-OpenStack-Ironic-API-Version")
                for r in self.history]


class NegotiationTest(ClientTestCase):

    def test_first_call_costs_one_request_at_client_max(self) -> None:
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation(),
                      headers=self.headers())
        self.client.get_allocation("a1")
        self.assertEqual(1, len(self.history))
        self.assertEqual(["1.65"], self.sent_versions())
        self.assertEqual("baremetal 1.65",
                         self.history[0].headers["OpenStack-API-Version"])
        # The range came with the answer: no discovery round trip later.
        self.assertEqual((1, 65), self.client.api_version)
        self.assertEqual(((1, 1), (1, 73)), self.client.server_version_range)
        self.assertEqual(1, len(self.history))

    def test_newer_server_still_gets_client_max(self) -> None:
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation(),
                      headers=fakes.version_headers(high="1.115"))
        self.client.get_allocation("a1")
        self.client.get_allocation("a1")
        self.assertEqual(["1.65", "1.65"], self.sent_versions())
        self.assertEqual((1, 65), self.client.api_version)

    def test_old_server_406_is_retried_once_at_its_maximum(self) -> None:
        def answer(request: Any, context: Any) -> dict[str, Any]:
            context.headers.update(fakes.version_headers(high="1.55"))
            version = request.headers["X-OpenStack-Ironic-API-Version"]
            if version == "1.65":
                context.status_code = 406
                return fakes.ironic_error("Version 1.65 was requested ...")
            context.status_code = 201
            return fakes.allocation()

        self.mock.post(ALLOCS, json=answer)
        created = self.client.create_allocation("baremetal")
        self.assertEqual("a1", created.uuid)
        self.assertEqual(["1.65", "1.55"], self.sent_versions())
        # Later calls go straight to the learned version.
        self.client.create_allocation("baremetal")
        self.assertEqual(["1.65", "1.55", "1.55"], self.sent_versions())
        self.assertEqual((1, 55), self.client.api_version)

    def test_server_too_old_for_update_names_feature(self) -> None:
        self.mock.patch(ALLOCS + "/a1", status_code=406,
                        json=fakes.ironic_error("bad version"),
                        headers=fakes.version_headers(high="1.56"))
        error = self.assertRaises(
            exceptions.VersionNotSupported,
            self.client.update_allocation, "a1", name="x")
        self.assertEqual("updating allocations", error.feature)
        self.assertEqual((1, 57), error.required)
        self.assertEqual((1, 56), error.server_max)
        self.assertIn("requires bare metal API version 1.57", str(error))
        self.assertIn("1.1 to 1.56", str(error))
        self.assertEqual(1, len(self.history))
        # Once the range is known, the check happens before sending.
        self.assertRaises(exceptions.VersionNotSupported,
                          self.client.update_allocation, "a1", name="x")
        self.assertEqual(1, len(self.history))

    def test_server_without_allocation_api(self) -> None:
        self.mock.post(ALLOCS, status_code=406,
                       headers=fakes.version_headers(high="1.46"))
        error = self.assertRaises(exceptions.VersionNotSupported,
                                  self.client.create_allocation, "rc")
        self.assertEqual((1, 52), error.required)
        self.assertEqual(1, len(self.history))

    def test_server_newer_than_everything_the_client_speaks(self) -> None:
        self.mock.get(ALLOCS + "/a1", status_code=406,
                      headers=fakes.version_headers("1.70", "1.90"))
        error = self.assertRaises(exceptions.VersionNotSupported,
                                  self.client.get_allocation, "a1")
        self.assertIn("this client (API up to 1.65)", str(error))
        self.assertIn("1.70 to 1.90", str(error))
        self.assertEqual(1, len(self.history))

    def test_feature_versions_of_create(self) -> None:
        self.mock.post(ALLOCS, status_code=406,
                       headers=fakes.version_headers(high="1.59"))
        error = self.assertRaises(
            exceptions.VersionNotSupported,
            self.client.create_allocation, "rc", owner="p1")
        self.assertEqual((1, 60), error.required)
        self.assertIn("owner", str(error))
        error = self.assertRaises(
            exceptions.VersionNotSupported,
            self.make_client(api_version="1.57").create_allocation,
            node="n1")
        self.assertEqual((1, 58), error.required)

    def test_406_without_range_reads_root_document(self) -> None:
        calls: list[str] = []

        def answer(request: Any, context: Any) -> dict[str, Any]:
            version = request.headers["X-OpenStack-Ironic-API-Version"]
            calls.append(version)
            if version == "1.65":
                context.status_code = 406
                return {}
            context.status_code = 201
            return fakes.allocation()

        self.mock.post(ALLOCS, json=answer)
        self.mock.get(E + "/", json={
            "name": "OpenStack Ironic API",
            "versions": [{"id": "v1", "status": "CURRENT",
                          "min_version": "1.1", "version": "1.58"}],
            "default_version": {"id": "v1", "min_version": "1.1",
                                "version": "1.58"}})
        self.client.create_allocation("rc")
        self.assertEqual(["1.65", "1.58"], calls)
        self.assertEqual(["POST", "GET", "POST"],
                         [r.method for r in self.history])
        # Discovery sends no version header.
        self.assertIsNone(
            self.history[1].headers.get("X-OpenStack-Ironic-API-Version"))

    def test_genuine_406_is_not_renegotiated(self) -> None:
        self.mock.get(ALLOCS, status_code=406,
                      json=fakes.ironic_error("Not acceptable"),
                      headers=self.headers())
        error = self.assertRaises(exceptions.NotAcceptable, list,
                                  self.client.list_allocations())
        self.assertEqual(406, error.status_code)
        self.assertEqual(1, len(self.history))

    def test_pinned_version_is_sent_and_never_downgraded(self) -> None:
        client = self.make_client(api_version="1.58")
        self.mock.get(ALLOCS + "/a1", status_code=406,
                      headers=fakes.version_headers(high="1.55"))
        error = self.assertRaises(exceptions.VersionNotSupported,
                                  client.get_allocation, "a1")
        self.assertEqual((1, 58), error.requested)
        self.assertIn("pinned to 1.58", str(error))
        self.assertIn("1.1 to 1.55", str(error))
        self.assertEqual(["1.58"], self.sent_versions())
        self.assertEqual((1, 58), client.api_version)

    def test_pin_too_old_for_feature_fails_without_request(self) -> None:
        client = self.make_client(api_version=(1, 52))
        error = self.assertRaises(exceptions.VersionNotSupported,
                                  client.update_allocation, "a1", name="n")
        self.assertEqual((1, 57), error.required)
        self.assertEqual((1, 52), error.requested)
        self.assertEqual([], self.history)

    def test_pin_values(self) -> None:
        self.assertEqual((1, 60),
                         self.make_client(api_version="1.60").api_version)
        self.assertEqual((1, 57),
                         self.make_client(api_version=" 1.57 ").api_version)
        self.assertEqual([], self.history)
        for bad in ("abc", "1.66", "2.0", "1.x"):
            self.assertRaises(exceptions.InvalidArgument,
                              self.make_client, api_version=bad)

    def test_api_version_discovers_lazily_once(self) -> None:
        self.mock.get(E + "/", json={"versions": [
            {"id": "v1", "min_version": "1.1", "version": "1.58"}]})
        client = self.make_client(api_version="latest")
        self.assertEqual((1, 58), client.api_version)
        self.assertEqual((1, 58), client.api_version)
        self.assertEqual(1, len(self.history))

    def test_discovery_accepts_range_headers_of_root(self) -> None:
        self.mock.get(E + "/", json={},
                      headers=fakes.version_headers(high="1.59"))
        self.assertEqual((1, 59), self.client.discover_version())


class AllocationCallsTest(ClientTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.mock.get(E + "/", json={})  # Must not be needed.

    def test_create_sends_every_field(self) -> None:
        self.mock.post(ALLOCS, status_code=201, headers=self.headers(),
                       json=fakes.allocation(name="web-1", owner="p1"))
        created = self.client.create_allocation(
            "baremetal", traits=["CUSTOM_GPU"], candidate_nodes=["n1", "n2"],
            name="web-1", uuid="a1", extra={"k": "v"}, owner="p1")
        request = self.history[0]
        self.assertEqual("POST", request.method)
        self.assertEqual(ALLOCS, request.url)
        self.assertEqual("application/json", request.headers["Content-Type"])
        self.assertEqual("application/json", request.headers["Accept"])
        self.assertEqual({
            "resource_class": "baremetal", "traits": ["CUSTOM_GPU"],
            "candidate_nodes": ["n1", "n2"], "name": "web-1", "uuid": "a1",
            "extra": {"k": "v"}, "owner": "p1"}, request.json())
        self.assertEqual("web-1", created.name)
        self.assertEqual("allocating", created.state)
        self.assertEqual(1, len(self.history))

    def test_renew_group_renews_every_member_and_names_failures(
            self) -> None:
        marks = {groups.GROUP_KEY: "g", groups.SIZE_KEY: 3}
        members = [fakes.allocation(f"a{i}", name=f"g-{i}", state="active",
                                    extra=marks) for i in range(3)]
        self.mock.get(ALLOCS, headers=self.headers(),
                      json={"allocations": members})
        for i in (0, 2):
            self.mock.patch(f"{ALLOCS}/a{i}", headers=self.headers(),
                            json=members[i])
        self.mock.patch(f"{ALLOCS}/a1", status_code=404,
                        headers=self.headers(), json=fakes.ironic_error(
                            "Allocation a1 could not be found."))
        with self.assertRaises(exceptions.ClientError) as ctx:
            self.client.renew_group("g", "2h")
        self.assertIn("Could not renew 1 allocation(s) of group g "
                      "(renewed 2, g-0, g-2):\n  g-1: ", str(ctx.exception))
        patches = [r for r in self.history if r.method == "PATCH"]
        self.assertEqual(3, len(patches))
        ends = {json.dumps(r.json(), sort_keys=True) for r in patches}
        self.assertEqual(1, len(ends), ends)  # one end for every member
        self.assertIn(leases.EXPIRES_KEY, ends.pop())
        self.assertRaises(exceptions.InvalidArgument,
                          self.client.renew_group, "g", "2x")
        self.assertEqual(3, len([r for r in self.history
                                 if r.method == "PATCH"]))

    def test_create_minimal_body(self) -> None:
        self.mock.post(ALLOCS, status_code=201, headers=self.headers(),
                       json=fakes.allocation())
        self.client.create_allocation("baremetal")
        body = self.history[0].json()
        # The client names the allocation itself, so a retry is safe.
        self.assertEqual(str(uuidlib.UUID(body["uuid"])), body.pop("uuid"))
        self.assertEqual({"resource_class": "baremetal"}, body)

    def test_create_backfill_without_resource_class(self) -> None:
        self.mock.post(ALLOCS, status_code=201, headers=self.headers(),
                       json=fakes.allocation(state="active",
                                             node_uuid="n1"))
        created = self.client.create_allocation(node="n1")
        body = self.history[0].json()
        body.pop("uuid")
        self.assertEqual({"node": "n1"}, body)
        self.assertEqual("n1", created.node_uuid)

    def test_create_rejects_bad_arguments_locally(self) -> None:
        self.assertRaises(exceptions.InvalidArgument,
                          self.client.create_allocation)
        self.assertRaises(exceptions.InvalidArgument,
                          self.client.create_allocation, "rc",
                          traits="CUSTOM_A")
        self.assertRaises(exceptions.InvalidArgument,
                          self.client.create_allocation, "rc",
                          candidate_nodes=[""])
        self.assertEqual([], self.history)

    def test_get_quotes_name_and_sends_fields(self) -> None:
        self.mock.get(ALLOCS + "/web%201", headers=self.headers(),
                      json={"uuid": "a1", "state": "active"})
        got = self.client.get_allocation("web 1", fields=["uuid", "state"])
        self.assertEqual("GET", self.history[0].method)
        self.assertEqual({"fields": ["uuid,state"]},
                         _query(self.history[0]))
        # Fields the server did not return are None, not invented.
        self.assertEqual(("a1", "active", None, None),
                         (got.uuid, got.state, got.resource_class,
                          got.traits))

    def test_get_rejects_unknown_fields(self) -> None:
        error = self.assertRaises(exceptions.InvalidArgument,
                                  self.client.get_allocation, "a1",
                                  fields=["uuid", "bogus"])
        self.assertIn("bogus", str(error))
        self.assertEqual([], self.history)

    def test_update_sends_json_patch(self) -> None:
        self.mock.patch(ALLOCS + "/a1", headers=self.headers(),
                        json=fakes.allocation(name="new",
                                              extra={"a/b": 1}))
        updated = self.client.update_allocation(
            "a1", name="new", set_extra={"a/b": 1, "c~d": "x"},
            unset_extra=["old"])
        request = self.history[0]
        self.assertEqual("PATCH", request.method)
        self.assertEqual("application/json", request.headers["Content-Type"])
        self.assertEqual("1.65",
                         request.headers["X-OpenStack-Ironic-API-Version"])
        self.assertEqual([
            {"op": "add", "path": "/name", "value": "new"},
            {"op": "add", "path": "/extra/a~1b", "value": 1},
            {"op": "add", "path": "/extra/c~0d", "value": "x"},
            {"op": "remove", "path": "/extra/old"},
        ], request.json())
        self.assertEqual({"a/b": 1}, dict(updated.extra or {}))

    def test_update_name_none_removes_it(self) -> None:
        self.mock.patch(ALLOCS + "/a1", headers=self.headers(),
                        json=fakes.allocation())
        self.client.update_allocation("a1", name=None)
        self.assertEqual([{"op": "remove", "path": "/name"}],
                         self.history[0].json())

    def test_update_without_changes_is_rejected(self) -> None:
        self.assertRaises(exceptions.InvalidArgument,
                          self.client.update_allocation, "a1")
        self.assertEqual([], self.history)

    def test_delete(self) -> None:
        self.mock.delete(ALLOCS + "/a1", status_code=204,
                         headers=self.headers())
        self.assertTrue(self.client.delete_allocation("a1"))
        self.assertEqual("DELETE", self.history[0].method)
        self.assertEqual(ALLOCS + "/a1", self.history[0].url)

    def test_delete_missing(self) -> None:
        self.mock.delete(ALLOCS + "/gone", status_code=404,
                         json=fakes.ironic_error("Allocation gone could "
                                                 "not be found."))
        self.assertRaises(exceptions.NotFound,
                          self.client.delete_allocation, "gone")
        self.assertFalse(
            self.client.delete_allocation("gone", ignore_missing=True))
        self.assertEqual(2, len(self.history))

    def test_node_allocation(self) -> None:
        self.mock.get(E + "/v1/nodes/node-1/allocation",
                      headers=self.headers(),
                      json=fakes.allocation(state="active",
                                            node_uuid="n1"))
        self.mock.delete(E + "/v1/nodes/node-1/allocation", status_code=204)
        got = self.client.get_node_allocation("node-1", fields=["uuid",
                                                                "owner"])
        self.assertEqual({"fields": ["uuid,owner"]}, _query(self.history[0]))
        self.assertEqual("n1", got.node_uuid)
        self.client.delete_node_allocation("node-1")
        self.assertEqual("DELETE", self.history[1].method)

    def test_delete_node_allocation_ignore_missing(self) -> None:
        self.mock.delete(E + "/v1/nodes/n1/allocation", status_code=404)
        self.client.delete_node_allocation("n1", ignore_missing=True)
        self.assertRaises(exceptions.NotFound,
                          self.client.delete_node_allocation, "n1")

    def test_get_node(self) -> None:
        self.mock.get(E + "/v1/nodes/n1", headers=self.headers(), json={
            "uuid": "n1", "name": "node-1", "provision_state": "available",
            "power_state": "power off", "maintenance": False,
            "resource_class": "baremetal", "traits": ["CUSTOM_A"],
            "allocation_uuid": "a1", "instance_uuid": "a1",
            "instance_info": {"traits": ["CUSTOM_A"]},
            "driver_info": {"secret": "***"},
            "created_at": "2024-05-01T10:00:00+00:00"})
        node = self.client.get_node("n1")
        self.assertIsInstance(node, Node)
        self.assertEqual(("available", "power off", False, ("CUSTOM_A",)),
                         (node.provision_state, node.power_state,
                          node.maintenance, node.traits))
        self.assertEqual("a1", node.allocation_uuid)
        self.assertIsNone(node.lessee)
        self.assertEqual(datetime.datetime(2024, 5, 1, 10, 0,
                                           tzinfo=datetime.timezone.utc),
                         node.created_at)

    def test_endpoint_with_version_suffix(self) -> None:
        client = self.make_client(endpoint=E + "/v1/")
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        client.get_allocation("a1")
        self.assertEqual(ALLOCS + "/a1", self.history[0].url)
        self.assertEqual(E, client.endpoint)

    def test_invalid_json_is_invalid_response(self) -> None:
        self.mock.get(ALLOCS + "/a1", text="<html>proxy</html>")
        self.assertRaises(exceptions.InvalidResponse,
                          self.client.get_allocation, "a1")
        self.mock.get(ALLOCS + "/a2", json={"uuid": 5})
        error = self.assertRaises(exceptions.InvalidResponse,
                                  self.client.get_allocation, "a2")
        self.assertIn("uuid", str(error))


class PaginationTest(ClientTestCase):

    def _pages(self, pages: list[list[str]]) -> None:
        """Serve pages like Ironic: full pages end with a next link that
        keeps only limit and marker (Ironic drops the filters)."""
        def answer(request: Any, context: Any) -> dict[str, Any]:
            query = _query(request)
            marker = query.get("marker", [None])[0]
            index = 0
            if marker is not None:
                index = next((i + 1 for i, page in enumerate(pages)
                              if page and page[-1] == marker), 0)
            page = pages[index] if index < len(pages) else []
            body: dict[str, Any] = {
                "allocations": [fakes.allocation(u) for u in page]}
            if index < len(pages) - 1:
                body["next"] = (f"http://public.example/v1/allocations?"
                                f"limit={len(page)}&marker={page[-1]}")
            return body

        self.mock.get(ALLOCS, json=answer, headers=self.headers())

    def test_follows_next_links_keeping_filters(self) -> None:
        self._pages([["a1", "a2"], ["a3", "a4"], ["a5"]])
        got = list(self.client.list_allocations(
            state="active", resource_class="rc", node="n1",
            sort_key="created_at", sort_dir="desc", page_size=2))
        self.assertEqual(["a1", "a2", "a3", "a4", "a5"],
                         [a.uuid for a in got])
        self.assertEqual(3, len(self.history))
        for request, marker in zip(self.history, [None, "a2", "a4"],
                                   strict=True):
            query = _query(request)
            # Requests stay on our endpoint, not the link's host.
            self.assertTrue(request.url.startswith(ALLOCS))
            self.assertEqual(["active"], query["state"])
            self.assertEqual(["rc"], query["resource_class"])
            self.assertEqual(["n1"], query["node"])
            self.assertEqual(["created_at"], query["sort_key"])
            self.assertEqual(["desc"], query["sort_dir"])
            self.assertEqual(["2"], query["limit"])
            self.assertEqual(marker, query.get("marker", [None])[0])

    def test_limit_caps_the_total(self) -> None:
        self._pages([["a1", "a2"], ["a3", "a4"], ["a5"]])
        got = list(self.client.list_allocations(limit=3, page_size=2))
        self.assertEqual(["a1", "a2", "a3"], [a.uuid for a in got])
        self.assertEqual([["2"], ["1"]],
                         [_query(r)["limit"] for r in self.history])

    def test_limit_alone_is_the_page_size(self) -> None:
        self._pages([["a1", "a2"]])
        list(self.client.list_allocations(limit=2))
        self.assertEqual(1, len(self.history))
        self.assertEqual(["2"], _query(self.history[0])["limit"])

    def test_no_limit_lets_server_choose_and_iterates_lazily(self) -> None:
        self._pages([["a1"], ["a2"]])
        iterator = self.client.list_allocations(marker="a0")
        self.assertEqual([], self.history)
        self.assertEqual("a1", next(iterator).uuid)
        self.assertEqual(1, len(self.history))
        self.assertNotIn("limit", _query(self.history[0]))

    def test_fields_are_joined(self) -> None:
        self._pages([["a1"]])
        got = list(self.client.list_allocations(fields=["uuid", "state"]))
        self.assertEqual(["uuid,state"], _query(self.history[0])["fields"])
        self.assertEqual(1, len(got))

    def test_bad_arguments(self) -> None:
        for kwargs in ({"limit": 0}, {"page_size": -1},
                       {"sort_dir": "up"}, {"fields": ["nope"]}):
            # Checked when called, before iteration starts.
            self.assertRaises(exceptions.InvalidArgument,
                              self.client.list_allocations, **kwargs)
        self.assertEqual([], self.history)

    def test_owner_filter_needs_1_60(self) -> None:
        client = self.make_client(api_version="1.58")
        self.assertRaises(exceptions.VersionNotSupported, list,
                          client.list_allocations(owner="p1"))
        self.assertEqual([], self.history)


class ErrorMappingTest(ClientTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.client = self.make_client(retry_policy=RetryPolicy(0))

    def test_each_status(self) -> None:
        cases = [
            (400, exceptions.BadRequest), (401, exceptions.Unauthorized),
            (403, exceptions.Forbidden), (404, exceptions.NotFound),
            (405, exceptions.MethodNotAllowed), (409, exceptions.Conflict),
            (500, exceptions.ServerError), (502, exceptions.ServerError),
            (503, exceptions.ServiceUnavailable), (418, exceptions.HttpError),
        ]
        for status, cls in cases:
            self.mock.get(ALLOCS + "/a1", status_code=status,
                          json=fakes.ironic_error(f"failure {status}"),
                          headers={"x-openstack-request-id": f"req-{status}"})
            error = self.assertRaises(cls, self.client.get_allocation, "a1")
            self.assertIs(cls, type(error))
            self.assertEqual(status, error.status_code)
            self.assertEqual(f"failure {status}", error.message)
            self.assertEqual(f"req-{status}", error.request_id)
            self.assertEqual("GET", error.method)
            if status == 404:
                # The URL tells a wrong endpoint from a missing allocation.
                self.assertIn(f"(HTTP 404 for GET {ALLOCS}/a1)", str(error))
            else:
                self.assertIn(f"(HTTP {status})", str(error))
            self.assertIn(f"Request-ID: req-{status}", str(error))

    def test_version_error_description_format(self) -> None:
        self.mock.get(ALLOCS + "/a1", status_code=400, json={
            "error_message": json.dumps({
                "code": "400", "title": "Bad Request",
                "description": "Invalid value for X-OpenStack-Ironic-API-"
                               "Version header"})})
        error = self.assertRaises(exceptions.BadRequest,
                                  self.client.get_allocation, "a1")
        self.assertIn("Invalid value", error.message)

    def test_plain_text_and_empty_bodies(self) -> None:
        self.mock.get(ALLOCS + "/a1", status_code=502,
                      text="Bad gateway from proxy\nmore")
        error = self.assertRaises(exceptions.ServerError,
                                  self.client.get_allocation, "a1")
        self.assertEqual("Bad gateway from proxy", error.message)
        self.mock.get(ALLOCS + "/a2", status_code=404, reason="Not Found")
        error = self.assertRaises(exceptions.NotFound,
                                  self.client.get_allocation, "a2")
        self.assertEqual("Not Found", error.message)


class RetryTest(ClientTestCase):

    def test_503_is_retried_with_backoff(self) -> None:
        self.mock.get(ALLOCS + "/a1", [
            {"status_code": 503}, {"status_code": 503},
            {"json": fakes.allocation()}])
        self.assertEqual("a1", self.client.get_allocation("a1").uuid)
        self.assertEqual(3, len(self.history))
        self.assertEqual([0.25, 0.5], self.clock.sleeps)

    def test_retry_budget_is_bounded(self) -> None:
        self.mock.get(ALLOCS + "/a1", status_code=503,
                      json=fakes.ironic_error("down", "Server"))
        error = self.assertRaises(exceptions.ServiceUnavailable,
                                  self.client.get_allocation, "a1")
        self.assertEqual("down", error.message)
        self.assertEqual(4, len(self.history))
        self.assertEqual([0.25, 0.5, 1.0], self.clock.sleeps)

    def test_retry_after_is_honoured_but_capped(self) -> None:
        self.mock.get(ALLOCS + "/a1", [
            {"status_code": 503, "headers": {"Retry-After": "1.5"}},
            {"status_code": 503, "headers": {"Retry-After": "3600"}},
            {"json": fakes.allocation()}])
        self.client.get_allocation("a1")
        self.assertEqual([1.5, 2.0], self.clock.sleeps)

    def test_locked_node_conflict_is_retried(self) -> None:
        locked = fakes.ironic_error(
            "Node n1 is locked by host c1, please retry after the current "
            "operation is completed.")
        self.mock.delete(ALLOCS + "/a1", [
            {"status_code": 409, "json": locked}, {"status_code": 204}])
        self.client.delete_allocation("a1")
        self.assertEqual(2, len(self.history))

    def test_deterministic_conflict_is_not_retried(self) -> None:
        self.mock.post(ALLOCS, status_code=409, json=fakes.ironic_error(
            "An allocation with name web-1 already exists."))
        error = self.assertRaises(exceptions.Conflict,
                                  self.client.create_allocation, "rc",
                                  name="web-1")
        self.assertIn("already exists", str(error))
        self.assertEqual(1, len(self.history))
        self.assertEqual([], self.clock.sleeps)

    def test_server_error_is_not_retried(self) -> None:
        self.mock.post(ALLOCS, status_code=500)
        self.assertRaises(exceptions.ServerError,
                          self.client.create_allocation, "rc")
        self.assertEqual(1, len(self.history))

    def test_refused_connection_is_retried_then_reported(self) -> None:
        self.mock.get(ALLOCS + "/a1", exc=requests.exceptions.ConnectionError(
            "HTTPConnectionPool: [Errno 111] Connection refused"))
        error = self.assertRaises(exceptions.ConnectionFailed,
                                  self.client.get_allocation, "a1")
        self.assertEqual(4, len(self.history))
        self.assertEqual(E, error.endpoint)
        self.assertIn(E, str(error))
        self.assertIn("Connection refused", str(error))

    def test_unresolvable_host_is_not_retried(self) -> None:
        self.mock.get(ALLOCS + "/a1", exc=requests.exceptions.ConnectionError(
            "Failed to resolve: Name or service not known"))
        error = self.assertRaises(exceptions.ConnectionFailed,
                                  self.client.get_allocation, "a1")
        self.assertEqual(1, len(self.history))
        self.assertIn("Name or service not known", str(error))

    def test_retries_can_be_disabled(self) -> None:
        client = self.make_client(retry_policy=RetryPolicy(max_retries=0))
        self.mock.get(ALLOCS + "/a1", status_code=503)
        self.assertRaises(exceptions.ServiceUnavailable,
                          client.get_allocation, "a1")
        self.assertEqual(1, len(self.history))


class WaitTest(ClientTestCase):

    def _states(self, uuid: str, *bodies: dict[str, Any]) -> None:
        self.mock.get(ALLOCS + "/" + uuid,
                      [{"json": b, "headers": self.headers()} for b in bodies])

    def test_returns_active_with_backoff(self) -> None:
        self._states("a1", fakes.allocation(), fakes.allocation(),
                     fakes.allocation(state="active", node_uuid="n1"))
        progress: list[Any] = []
        created = Allocation.from_wire(fakes.allocation())
        done = self.client.wait_for_allocation(created,
                                               on_progress=progress.append)
        self.assertEqual(("active", "n1"), (done.state, done.node_uuid))
        self.assertEqual([0.05, 0.1, 0.2], self.clock.sleeps)
        self.assertEqual(3, len(self.history))
        self.assertEqual([1, 1, 1], [p.pending for p in progress])
        self.assertEqual([0, 1, 2], [p.polls for p in progress])

    def test_identifier_is_fetched_at_once(self) -> None:
        self._states("web-1", fakes.allocation(state="active"))
        self.client.wait_for_allocation("web-1")
        self.assertEqual([], self.clock.sleeps)
        self.assertEqual(1, len(self.history))

    def test_error_raises_allocation_failed(self) -> None:
        self._states("a1", fakes.allocation(
            state="error", last_error="No available nodes match"))
        error = self.assertRaises(exceptions.AllocationFailed,
                                  self.client.wait_for_allocation, "a1")
        self.assertEqual("No available nodes match", error.last_error)
        self.assertEqual("a1", error.allocation.uuid)
        self.assertIn("No available nodes match", str(error))

    def test_timeout_names_allocation_and_state(self) -> None:
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation(name="web-1"))
        start = self.clock.now
        error = self.assertRaises(exceptions.WaitTimeout,
                                  self.client.wait_for_allocation, "a1",
                                  timeout=1.0)
        self.assertEqual("allocating", error.last_state)
        self.assertIn("web-1", str(error))
        self.assertIn("allocating", str(error))
        # The last poll leaves FINAL_POLL seconds for its answer.
        self.assertAlmostEqual(start + 0.8, self.clock.now)
        self.assertEqual([0.05, 0.1, 0.2, 0.4], self.clock.sleeps[:4])
        self.assertAlmostEqual(0.05, self.clock.sleeps[4])
        self.assertEqual(6, len(self.history))

    def test_allocate_deletes_on_error(self) -> None:
        self.mock.post(ALLOCS, status_code=201, json=fakes.allocation())
        self._states("a1", fakes.allocation(state="error",
                                            last_error="no nodes"))
        self.mock.delete(ALLOCS + "/a1", status_code=204)
        self.assertRaises(exceptions.AllocationFailed,
                          self.client.allocate, "rc")
        self.assertEqual(["POST", "GET", "DELETE"],
                         [r.method for r in self.history])

    def test_allocate_deletes_on_timeout(self) -> None:
        self.mock.post(ALLOCS, status_code=201, json=fakes.allocation())
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        self.mock.delete(ALLOCS + "/a1", status_code=204)
        self.assertRaises(exceptions.WaitTimeout, self.client.allocate,
                          "rc", timeout=0.5)
        self.assertEqual("DELETE", self.history[-1].method)

    def test_allocate_keeps_error_when_cleanup_fails(self) -> None:
        self.mock.post(ALLOCS, status_code=201, json=fakes.allocation())
        self._states("a1", fakes.allocation(state="error",
                                            last_error="no nodes"))
        self.mock.delete(ALLOCS + "/a1", status_code=500)
        error = self.assertRaises(exceptions.AllocationFailed,
                                  self.client.allocate, "rc")
        self.assertEqual("no nodes", error.last_error)

    def test_allocate_success_keeps_allocation(self) -> None:
        self.mock.post(ALLOCS, status_code=201, json=fakes.allocation())
        self._states("a1", fakes.allocation(state="active", node_uuid="n"))
        self.assertEqual("n", self.client.allocate("rc").node_uuid)
        self.assertNotIn("DELETE", [r.method for r in self.history])

    def test_allocate_settled_by_the_answer_is_one_request(self) -> None:
        self.mock.post(ALLOCS, status_code=201, json=fakes.allocation(
            state="active", node_uuid="n"))
        self.assertEqual("n", self.client.allocate("rc").node_uuid)
        self.assertEqual(["POST"], [r.method for r in self.history])
        self.assertEqual("wait=10", self.history[0].headers["Prefer"])

    def test_allocate_asks_for_no_longer_than_its_timeout(self) -> None:
        self.mock.post(ALLOCS, status_code=201, json=fakes.allocation(
            state="active", node_uuid="n"))
        self.client.allocate("rc", timeout=3.7)
        self.assertEqual("wait=3", self.history[-1].headers["Prefer"])
        self.client.allocate("rc", timeout=0.5)
        self.assertNotIn("Prefer", self.history[-1].headers)

    def test_prefer_wait_stays_below_the_request_timeout(self) -> None:
        self.mock.post(ALLOCS, status_code=201, json=fakes.allocation())
        for timeout, expected in ((5.0, "wait=4"), (60.0, "wait=10"),
                                  (1.5, None)):
            adapter = ks_adapter.Adapter(
                ks_session.Session(timeout=timeout),
                service_type="baremetal", endpoint_override=E)
            client = Client(adapter, _clock=self.clock,
                            _sleep=self.clock.sleep)
            client.create_allocation("rc", prefer_wait=10)
            self.assertEqual(expected,
                             self.history[-1].headers.get("Prefer"), timeout)

    def test_create_sends_no_preference_unless_asked(self) -> None:
        self.mock.post(ALLOCS, status_code=201, json=fakes.allocation())
        self.client.create_allocation("rc")
        self.client.create_allocation("rc", prefer_wait=0.5)
        self.assertEqual([None, None], [r.headers.get("Prefer")
                                        for r in self.history])


class FakeAllocationServer:
    """Allocations that settle at given (fake) times, served like Ironic."""

    def __init__(self, clock: fakes.FakeClock,
                 settle: dict[str, tuple[float, str]],
                 resource_class: str = "rc") -> None:
        self.clock = clock
        self.settle = settle
        self.resource_class = resource_class

    def body(self, uuid: str) -> dict[str, Any]:
        when, final = self.settle[uuid]
        state = final if self.clock.now >= when else "allocating"
        return fakes.allocation(
            uuid, state=state, resource_class=self.resource_class,
            last_error="boom" if state == "error" else None)

    def get(self, request: Any, context: Any) -> dict[str, Any]:
        return self.body(request.path.rsplit("/", 1)[-1])

    def list(self, request: Any, context: Any) -> dict[str, Any]:
        query = _query(request)
        items = [self.body(u) for u in self.settle]
        if "state" in query:
            items = [i for i in items if i["state"] == query["state"][0]]
        if "resource_class" in query:
            items = [i for i in items
                     if i["resource_class"] == query["resource_class"][0]]
        if "fields" in query:
            names = query["fields"][0].split(",")
            items = [{k: i[k] for k in names} for i in items]
        return {"allocations": items}


class WaitManyTest(ClientTestCase):

    def _serve(self, settle: dict[str, tuple[float, str]]) -> None:
        server = FakeAllocationServer(self.clock, settle)
        # requests-mock prefers the matcher registered last.
        self.mock.get(requests_mock.ANY, json=server.get,
                      headers=self.headers())
        self.mock.get(ALLOCS, json=server.list, headers=self.headers())
        self.created = [Allocation.from_wire(server.body(u)) for u in settle]

    def test_one_list_request_per_round(self) -> None:
        start = self.clock.now
        settle = {f"a{i}": (start + 0.3 + (0.5 if i % 2 else 0), "active")
                  for i in range(10)}
        self._serve(settle)
        rounds: list[int] = []
        done = self.client.wait_for_allocations(
            self.created, on_progress=lambda p: rounds.append(p.pending))
        self.assertEqual(["active"] * 10, [a.state for a in done])
        self.assertEqual(list(settle), [a.uuid for a in done])
        polls = [r for r in self.history
                 if _query(r).get("state") == ["allocating"]]
        # Rounds at +0.05, 0.15, 0.35 (5 settle), 0.75, 1.55 (5 settle).
        self.assertEqual([0.05, 0.1, 0.2, 0.4, 0.8], self.clock.sleeps)
        self.assertEqual(5, len(polls))
        for request in polls:
            self.assertEqual(["uuid"], _query(request)["fields"])
            self.assertEqual(["rc"], _query(request)["resource_class"])
        # Settled ones are fetched with one list each time some settle.
        fetches = [r for r in self.history if r not in polls]
        self.assertEqual(2, len(fetches))
        self.assertEqual(7, len(self.history))
        self.assertEqual([10, 10, 10, 5, 5], rounds)

    def test_errors_raise_after_all_settled(self) -> None:
        start = self.clock.now
        self._serve({"a1": (start + 0.1, "active"),
                     "a2": (start + 0.1, "error"),
                     "a3": (start + 0.3, "active")})
        error = self.assertRaises(exceptions.AllocationFailed,
                                  self.client.wait_for_allocations,
                                  self.created)
        self.assertEqual("a2", error.allocation.uuid)
        self.assertEqual(["active", "error", "active"],
                         [a.state for a in error.results])

    def test_errors_can_be_returned(self) -> None:
        start = self.clock.now
        self._serve({"a1": (start, "error"), "a2": (start, "active")})
        done = self.client.wait_for_allocations(self.created,
                                                raise_on_error=False)
        self.assertEqual(["error", "active"], [a.state for a in done])

    def test_timeout_lists_the_unfinished(self) -> None:
        start = self.clock.now
        self._serve({"a1": (start + 0.1, "active"),
                     "a2": (start + 99, "active"),
                     "a3": (start + 99, "active")})
        error = self.assertRaises(exceptions.WaitTimeout,
                                  self.client.wait_for_allocations,
                                  self.created, timeout=2.0)
        self.assertEqual(["a2", "a3"], [a.uuid for a in error.allocations])
        self.assertIn("2 allocations", str(error))
        self.assertEqual("active", error.results[0].state)

    def test_identifiers_are_read_first(self) -> None:
        start = self.clock.now
        self._serve({"a1": (start, "active"), "a2": (start, "active")})
        done = self.client.wait_for_allocations(["a1", "a2"])
        self.assertEqual(["active", "active"], [a.state for a in done])
        self.assertEqual(2, len(self.history))


class ConstructorTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.mock = self.useFixture(rm_fixture.Fixture())
        for name in list(os.environ):
            if name.startswith("OS_"):
                self.useFixture(fixtures.EnvironmentVariable(name))

    def _clouds(self, text: str) -> None:
        folder = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(folder))
        path = os.path.join(folder, "clouds.yaml")
        with open(path, "w") as handle:
            handle.write(text)
        self.useFixture(fixtures.EnvironmentVariable(
            "OS_CLIENT_CONFIG_FILE", path))

    def test_from_endpoint(self) -> None:
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        client = Client.from_endpoint(E + "/v1", api_version="1.58")
        client.get_allocation("a1")
        request = self.mock.request_history[0]
        self.assertEqual("1.58",
                         request.headers["X-OpenStack-Ironic-API-Version"])
        self.assertNotIn("X-Auth-Token", request.headers)
        self.assertIn("baremetal-allocclient", request.headers["User-Agent"])

    def test_from_endpoint_rejects_non_urls(self) -> None:
        self.assertRaises(exceptions.InvalidArgument,
                          Client.from_endpoint, "ironic.test:6385")

    def test_from_cloud_none_auth_with_override(self) -> None:
        self._clouds(
            "clouds:\n"
            "  lab:\n"
            "    auth_type: none\n"
            "    auth:\n"
            "      endpoint: http://other.test:1\n"
            f"    baremetal_endpoint_override: {E}\n"
            "    baremetal_api_version: '1.58'\n")
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        client = Client.from_cloud("lab")
        client.get_allocation("a1")
        request = self.mock.request_history[0]
        self.assertEqual(ALLOCS + "/a1", request.url)
        self.assertEqual("1.58",
                         request.headers["X-OpenStack-Ironic-API-Version"])

    def test_from_cloud_none_auth_endpoint_only(self) -> None:
        self._clouds(
            "clouds:\n"
            "  lab:\n"
            "    auth_type: none\n"
            "    auth:\n"
            f"      endpoint: {E}/v1\n")
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        Client.from_cloud("lab").get_allocation("a1")
        request = self.mock.request_history[0]
        self.assertEqual(ALLOCS + "/a1", request.url)
        self.assertEqual("1.65",
                         request.headers["X-OpenStack-Ironic-API-Version"])

    def test_from_cloud_overrides(self) -> None:
        self._clouds("clouds: {}\n")
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        Client.from_cloud(auth_type="none", auth={"endpoint": E},
                          api_version="1.60").get_allocation("a1")
        self.assertEqual("1.60", self.mock.request_history[0].headers[
            "X-OpenStack-Ironic-API-Version"])

    def test_from_cloud_http_basic_from_env(self) -> None:
        for name, value in (("OS_AUTH_TYPE", "http_basic"),
                            ("OS_ENDPOINT", E), ("OS_USERNAME", "admin"),
                            ("OS_PASSWORD", "secret")):
            self.useFixture(fixtures.EnvironmentVariable(name, value))
        self._clouds("clouds: {}\n")
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        Client.from_cloud().get_allocation("a1")
        request = self.mock.request_history[0]
        self.assertEqual(ALLOCS + "/a1", request.url)
        self.assertTrue(request.headers["Authorization"].startswith("Basic "))

    def _keystone(self, status: int = 201) -> None:
        keystone = "http://keystone.test/v3"
        self.mock.get(keystone, json={"version": ks_fixture.V3Discovery(
            keystone)})
        token = ks_fixture.V3Token()
        token.set_project_scope()
        service = token.add_service("baremetal")
        service.add_standard_endpoints(
            public=E, internal="http://internal.test:6385",
            region="RegionOne")
        if status == 201:
            self.mock.post(keystone + "/auth/tokens", json=token,
                           status_code=201,
                           headers={"X-Subject-Token": "tok-1"})
        else:
            self.mock.post(keystone + "/auth/tokens", status_code=status,
                           json={"error": {"message": "bad password",
                                           "code": status}})
        self._clouds(
            "clouds:\n"
            "  cloud:\n"
            "    auth_type: password\n"
            "    region_name: RegionOne\n"
            "    auth:\n"
            f"      auth_url: {keystone}\n"
            "      username: u\n"
            "      password: p\n"
            "      project_name: proj\n"
            "      user_domain_name: Default\n"
            "      project_domain_name: Default\n")

    def test_from_cloud_password_uses_token_and_catalog(self) -> None:
        self._keystone()
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        client = Client.from_cloud("cloud")
        self.assertEqual("a1", client.get_allocation("a1").uuid)
        request = self.mock.request_history[-1]
        self.assertEqual(ALLOCS + "/a1", request.url)
        self.assertEqual("tok-1", request.headers["X-Auth-Token"])

    def test_from_cloud_wrong_password_is_unauthorized(self) -> None:
        self._keystone(status=401)
        client = Client.from_cloud("cloud")
        error = self.assertRaises(exceptions.Unauthorized,
                                  client.get_allocation, "a1")
        self.assertEqual(401, error.status_code)

    def test_from_cloud_unknown_cloud(self) -> None:
        self._clouds("clouds: {}\n")
        self.assertRaises(exceptions.ConfigurationError,
                          Client.from_cloud, "missing")

    def test_from_client_manager(self) -> None:
        class Manager:
            session = ks_session.Session()
            region_name = "RegionOne"
            interface = "internal"

            def get_endpoint_for_service_type(
                    self, service_type: str, region_name: str | None = None,
                    interface: str = "public") -> str:
                assert (service_type, region_name, interface) == (
                    "baremetal", "RegionOne", "internal")
                return E

        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        client = Client.from_client_manager(Manager(), api_version="1.60")
        client.get_allocation("a1")
        self.assertEqual(ALLOCS + "/a1", self.mock.request_history[0].url)

    def test_no_endpoint_is_a_configuration_error(self) -> None:
        client = Client.from_session(ks_session.Session())
        error = self.assertRaises(exceptions.ConfigurationError,
                                  client.get_allocation, "a1")
        self.assertIn("endpoint", str(error))
