"""``serve --backend placement`` start-up checks, the Placement client's
microversion check and error parsing over HTTP, and the capacity CLI's
formatting."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile

import testtools
from requests_mock.contrib import fixture as rm_fixture

from baremetal_allocclient.osc.v1 import capacity as capacity_cli
from baremetal_allocclient.server import cmd
from baremetal_allocclient.server.allocation.placement import client as pc
from baremetal_allocclient.tests.fixtures.processes import free_port

URL = "http://placement.test"


class ServeOptionTests(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        self.db = "sqlite:///" + os.path.join(tmp, "t.sqlite")

    def _serve(self, *extra: str) -> tuple[int, str]:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = cmd.main(["serve", "--db", self.db, "--port", "0",
                             *extra])
        return code, err.getvalue()

    def test_placement_needs_an_endpoint(self) -> None:
        code, err = self._serve("--backend", "placement")
        self.assertEqual(1, code)
        self.assertIn("--backend placement needs --placement-url", err)

    def test_unreachable_placement_refuses_to_start(self) -> None:
        code, err = self._serve(
            "--backend", "placement", "--placement-url",
            f"http://127.0.0.1:{free_port()}",
        )
        self.assertEqual(1, code)
        self.assertIn("cannot use Placement: Placement is unreachable", err)
        self.assertNotIn("Traceback", err)

    def test_bad_interval_is_a_usage_error(self) -> None:
        with contextlib.redirect_stderr(io.StringIO()):
            error = self.assertRaises(
                SystemExit, cmd.main,
                ["serve", "--placement-sync-interval", "0"],
            )
        self.assertEqual(2, error.code)


class ClientHttpTests(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.client = pc.PlacementClient(pc.noauth_session(), URL)
        self.mock = self.useFixture(rm_fixture.Fixture())

    def test_old_placement_is_refused(self) -> None:
        self.mock.get(URL + "/", json={"versions": [
            {"id": "v1.0", "max_version": "1.20", "min_version": "1.0"}]})
        error = self.assertRaises(pc.PlacementError,
                                  self.client.check_version)
        self.assertIn("supports up to microversion 1.20", str(error))

    def test_headers_and_error_codes(self) -> None:
        self.mock.put(URL + "/allocations/c1", status_code=409, json={
            "errors": [{"status": 409, "code": pc.CONCURRENT_UPDATE,
                        "detail": "consumer generation conflict"}]})
        error = self.assertRaises(
            pc.PlacementError, self.client.claim, "c1", "rp", "CUSTOM_X",
            "p", "u")
        self.assertTrue(error.concurrent_update)
        sent = self.mock.last_request
        self.assertEqual("placement 1.31",
                         sent.headers["OpenStack-API-Version"])
        self.assertEqual("admin", sent.headers["X-Auth-Token"])
        self.assertIsNone(sent.json()["consumer_generation"])

    def test_candidates_query(self) -> None:
        self.mock.get(URL + "/allocation_candidates", json={
            "allocation_requests": [
                {"allocations": {"rp1": {"resources": {"CUSTOM_X": 1}}}}],
            "provider_summaries": {}})
        found = self.client.allocation_candidates(
            "CUSTOM_X", ["CUSTOM_B", "CUSTOM_A"], in_tree="rp1")
        self.assertEqual(["rp1"], found)
        query = self.mock.last_request.qs
        self.assertEqual(["custom_x:1"], query["resources"])
        self.assertEqual(["custom_a,custom_b"], query["required"])
        self.assertEqual(["rp1"], query["in_tree"])

    def test_gateway_errors_mean_unreachable(self) -> None:
        self.mock.get(URL + "/resource_providers", status_code=503)
        self.assertRaises(pc.PlacementUnavailable, self.client.providers)


class CapacityCliTests(testtools.TestCase):
    def test_rows(self) -> None:
        rows = capacity_cli.capacity_rows([{
            "resource_class": "gold", "total": 4, "allocated": 1,
            "reserved": 2, "free": 1,
            "reserved_by_reason": {"not_available": 1, "maintenance": 1},
        }])
        ((*counts, reasons, free),) = rows
        self.assertEqual(["gold", 4, 1, 2], counts)
        self.assertEqual(1, free)
        self.assertEqual("maintenance=1, not_available=1",
                         reasons.human_readable())
        self.assertEqual({"not_available": 1, "maintenance": 1},
                         reasons.machine_readable())
        self.assertEqual("", capacity_cli.format_reasons({}))
