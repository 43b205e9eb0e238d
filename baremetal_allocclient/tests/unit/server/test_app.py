"""The WSGI application in-process: admission, headers, error bodies."""

from __future__ import annotations

import json
from unittest import mock

import psycopg
import pymysql
import testtools
from sqlalchemy.exc import DataError, OperationalError, ProgrammingError

from baremetal_allocclient.server.allocation.handlers import allocations
from baremetal_allocclient.server.api.limits import MAX_BODY
from baremetal_allocclient.server.app import INTERNAL_ERROR
from baremetal_allocclient.tests.fixtures.wsgi import WsgiApp
from baremetal_allocclient.tests.unit.server._sqlite import SQLiteDatabase

LATEST = {"X-OpenStack-Ironic-API-Version": "latest"}


class AppTests(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.db = self.useFixture(SQLiteDatabase()).db
        wsgi = self.useFixture(WsgiApp(self.db))
        self.workers, self.client = wsgi.workers, wsgi.client

    def fault(self, body: bytes) -> str:
        return str(json.loads(json.loads(body)["error_message"])
                   ["faultstring"])

    def test_full_pool_refuses_before_storing(self) -> None:
        self.assertTrue(self.workers.try_reserve_slot())  # pool now full
        resp = self.client.post("/v1/allocations", headers=LATEST,
                                json={"resource_class": "rc"})
        self.assertEqual(503, resp.status_code)
        self.assertIn("busy", self.fault(resp.data))
        listed = self.client.get("/v1/allocations", headers=LATEST).json
        assert listed is not None
        self.assertEqual([], listed["allocations"])
        self.workers.release_slot()
        resp = self.client.post("/v1/allocations", headers=LATEST,
                                json={"resource_class": "rc"})
        self.assertEqual(201, resp.status_code, resp.data)

    def test_version_headers_on_every_response(self) -> None:
        for path, headers, status in [
            ("/", {}, 200),
            ("/v1", LATEST, 200),
            ("/v1/nowhere", LATEST, 404),
            ("/v1/nodes", {"X-OpenStack-Ironic-API-Version": "9.9"}, 406),
        ]:
            resp = self.client.get(path, headers=headers)
            self.assertEqual(status, resp.status_code, path)
            for name in ("Minimum", "Maximum"):
                self.assertIn(
                    f"X-OpenStack-Ironic-API-{name}-Version", resp.headers)
            # Like Ironic, a refused version gets the range, not a version.
            self.assertEqual(
                status != 406,
                "X-OpenStack-Ironic-API-Version" in resp.headers, path)
            self.assertTrue(
                resp.headers["X-OpenStack-Request-Id"].startswith("req-"))

    def test_oversized_body_is_refused(self) -> None:
        resp = self.client.post(
            "/v1/allocations", headers=LATEST,
            data=b"{" + b" " * MAX_BODY + b"}",
            content_type="application/json")
        self.assertEqual(413, resp.status_code)
        self.assertIn("error_message", json.loads(resp.data))

    def test_wrong_method_is_405(self) -> None:
        resp = self.client.put("/v1/allocations", headers=LATEST)
        self.assertEqual(405, resp.status_code)


class ErrorBodyTests(testtools.TestCase):
    """What a handler's unexpected failure looks like from outside."""

    def setUp(self) -> None:
        super().setUp()
        db = self.useFixture(SQLiteDatabase()).db
        wsgi = self.useFixture(WsgiApp(db))
        self.app, self.client = wsgi.app, wsgi.client
        self.endpoint = next(
            name for name, func in self.app._handlers.items()
            if func is allocations.list_allocations)

    def answer_when_raising(self, exc: Exception) -> tuple[int, str, str]:
        """(status, faultcode, faultstring) of GET /v1/allocations whose
        handler raises ``exc``."""

        def handler(ctx: object) -> None:
            raise exc

        self.app._handlers[self.endpoint] = handler
        resp = self.client.get("/v1/allocations", headers=LATEST)
        fault = json.loads(json.loads(resp.data)["error_message"])
        self.assertIsNone(fault["debuginfo"])
        return resp.status_code, fault["faultcode"], fault["faultstring"]

    def test_a_bug_is_a_500_naming_nothing(self) -> None:
        secret = "SELECT password FROM users WHERE id = 'x\\x00'"
        for exc in (
            RuntimeError(secret),
            ProgrammingError(secret, {}, Exception(secret)),
            OperationalError(secret, {}, pymysql.err.OperationalError(
                1146, f"Table doesn't exist: {secret}")),
        ):
            status, code, message = self.answer_when_raising(exc)
            self.assertEqual((500, "Server", INTERNAL_ERROR),
                             (status, code, message), repr(exc))

    def test_a_value_the_database_refuses_is_a_400(self) -> None:
        for orig in (
            psycopg.DataError("text fields cannot contain NUL (0x00)"),
            pymysql.err.OperationalError(4025, "CONSTRAINT failed"),
        ):
            exc = (DataError if isinstance(orig, psycopg.Error)
                   else OperationalError)("INSERT x", {}, orig)
            status, code, message = self.answer_when_raising(exc)
            self.assertEqual(400, status, repr(exc))
            self.assertEqual("Client", code)
            self.assertNotIn("INSERT", message)

    def test_a_lost_connection_is_a_503(self) -> None:
        exc = OperationalError("SELECT 1", {}, pymysql.err.OperationalError(
            2013, "Lost connection to server during query"))
        status, _code, message = self.answer_when_raising(exc)
        self.assertEqual(503, status)
        self.assertIn("temporarily unavailable", message)


class _Deadlock(Exception):
    sqlstate = "40P01"


class AfterCommitTests(testtools.TestCase):
    """Once the allocation row is committed, the answer is a 201."""

    def setUp(self) -> None:
        super().setUp()
        db = self.useFixture(SQLiteDatabase()).db
        wsgi = self.useFixture(WsgiApp(db, backlog=4))
        self.workers, self.client = wsgi.workers, wsgi.client

    def test_a_failing_wait_answers_the_stored_allocation(self) -> None:
        failures = (
            # A deadlock once made the whole create run again (a second
            # allocation per retry).
            OperationalError("SELECT", {}, _Deadlock()),
            OperationalError("SELECT", {}, pymysql.err.OperationalError(
                2013, "Lost connection")),
            RuntimeError("bug"),
        )
        for number, failure in enumerate(failures, start=1):
            with mock.patch.object(self.workers, "settle",
                                   side_effect=failure):
                resp = self.client.post(
                    "/v1/allocations", json={"resource_class": "rc"},
                    headers={**LATEST, "Prefer": "wait=5"})
            self.assertEqual(201, resp.status_code, resp.data)
            assert resp.json is not None
            self.assertEqual("allocating", resp.json["state"])
            listed = self.client.get("/v1/allocations", headers=LATEST).json
            assert listed is not None
            self.assertEqual(number, len(listed["allocations"]), failure)
