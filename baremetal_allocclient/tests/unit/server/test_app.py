"""The WSGI application in-process: admission, headers, error bodies."""

from __future__ import annotations

import json

import testtools
from werkzeug.test import Client

from baremetal_allocclient.server.api.context import Services
from baremetal_allocclient.server.app import MAX_BODY, Application
from baremetal_allocclient.server.conductor.fake_hardware import FakeHardware
from baremetal_allocclient.server.conductor.workers import AllocationWorkers
from baremetal_allocclient.tests.unit.server._sqlite import SQLiteDatabase

LATEST = {"X-OpenStack-Ironic-API-Version": "latest"}


class AppTests(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.db = self.useFixture(SQLiteDatabase()).db
        self.workers = AllocationWorkers(self.db, "test", workers=1,
                                         backlog=0)
        self.addCleanup(self.workers.shutdown)
        hardware = FakeHardware(self.db, step_delay=0.01)
        self.addCleanup(hardware.shutdown)
        app = Application(Services(self.db, self.workers, hardware, "test"))
        self.client = Client(app)

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
