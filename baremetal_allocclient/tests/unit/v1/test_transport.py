"""HTTP-level tests of the transport through a Client: version
negotiation, error mapping, retries, the endpoint and bodies.
"""

from __future__ import annotations

import json
from typing import Any

import requests

from baremetal_allocclient import exceptions
from baremetal_allocclient.tests.unit.v1 import fakes
from baremetal_allocclient.tests.unit.v1.client_case import (
    ALLOCS,
    ClientTestCase,
    E,
)
from baremetal_allocclient.v1 import RetryPolicy


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


class EndpointAndBodyTest(ClientTestCase):
    """The endpoint URL and the parsing of bodies."""

    def setUp(self) -> None:
        super().setUp()
        self.mock.get(E + "/", json={})  # Must not be needed.

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

    def test_sqlite_lock_of_ironic_is_retried_on_delete(self) -> None:
        # Ironic on SQLite: a write that met another's lock is a 500.
        locked = fakes.ironic_error(
            "(sqlite3.OperationalError) database is locked")
        self.mock.delete(ALLOCS + "/a1", [
            {"status_code": 500, "json": locked}, {"status_code": 204}])
        self.assertTrue(self.client.delete_allocation("a1"))
        self.assertEqual(2, len(self.history))
        # The first DELETE may have been applied: the repeat finds the
        # allocation gone, which ignore_missing takes as released.
        self.mock.delete(ALLOCS + "/a2", [
            {"status_code": 500, "json": locked},
            {"status_code": 404, "json": fakes.ironic_error("gone")}])
        self.assertFalse(self.client.delete_allocation(
            "a2", ignore_missing=True))
        # A create is not repeated: it may have been stored.
        self.mock.post(ALLOCS, status_code=500, json=locked)
        self.assertRaises(exceptions.ServerError,
                          self.client.create_allocation, "rc")
        self.assertEqual(5, len(self.history))

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
