"""The database goes away for a while and comes back.

The server reaches the database through a loopback proxy the test cuts
(:mod:`._proxy`); the shared database server is not touched.  Meanwhile
the API answers 503 with a clear message (no 500, no traceback); after
it the server recovers by itself, and the allocations that were in
flight during the outage all finish.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from typing import Any, ClassVar

import requests
import testtools

from baremetal_allocclient.tests.fixtures import launcher
from baremetal_allocclient.tests.fixtures.processes import free_port
from baremetal_allocclient.tests.functional.multiprocess import (
    _cluster,
    _proxy,
)

IN_FLIGHT = 10
OUTAGE = 6.0  # longer than the heartbeat timeout and the delay below
_HEADERS = {"X-OpenStack-Ironic-API-Version": "latest"}


class _OutageTests:
    """Mixin; ``kind`` is set by the concrete classes."""

    kind: ClassVar[str]

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        case: Any = self
        db, self.rc = _cluster.fleet(case.addCleanup, self.kind,
                                     IN_FLIGHT + 5)
        self.proxy, proxied = _proxy.in_front_of(db.url)
        case.addCleanup(self.proxy.stop)
        self.server = _cluster.start(
            proxied,
            "outage-" + uuid.uuid4().hex[:6], *_cluster.FAST,
            "--allocation-delay", "2",
        )
        case.addCleanup(self.server.cleanup)

    def _post(self) -> requests.Response:
        return requests.post(
            self.server.endpoint + "/v1/allocations",
            json={"resource_class": self.rc}, headers=_HEADERS, timeout=60,
        )

    def _list(self) -> requests.Response:
        return requests.get(
            self.server.endpoint
            + f"/v1/allocations?resource_class={self.rc}",
            headers=_HEADERS, timeout=60,
        )

    def _assert_unavailable(self, resp: requests.Response) -> None:
        case: Any = self
        case.assertEqual(503, resp.status_code, resp.text)
        fault = json.loads(resp.json()["error_message"])
        case.assertEqual(
            "The database is temporarily unavailable; retry later.",
            fault["faultstring"],
        )
        case.assertEqual("Server", fault["faultcode"])
        case.assertIsNone(fault["debuginfo"])

    def test_outage_answers_503_then_recovers_without_loss(self) -> None:
        case: Any = self
        posted = _cluster.post_many([self.server], IN_FLIGHT,
                                    {"resource_class": self.rc}, 8)
        case.assertEqual([201] * IN_FLIGHT, [s for s, _b in posted])
        uuids = sorted(body["uuid"] for _s, body in posted)

        self.proxy.stop()
        cut = time.monotonic()
        while time.monotonic() - cut < OUTAGE:
            started = time.monotonic()
            self._assert_unavailable(self._list())
            self._assert_unavailable(self._post())
            # Failing fast, not hanging on the dead database.
            case.assertLess(time.monotonic() - started, 5)
            root = requests.get(self.server.endpoint + "/", timeout=10)
            case.assertEqual(200, root.status_code)
            time.sleep(0.5)

        self.proxy.start()
        restored = time.monotonic()
        deadline = restored + 30
        while self._list().status_code != 200:
            case.assertLess(time.monotonic(), deadline, "no recovery")
            time.sleep(0.1)
        recovery = time.monotonic() - restored
        final = _cluster.wait_settled(self.server, self.rc, timeout=60)
        settled = time.monotonic() - restored
        print(f"\n{self.kind}: API back {recovery:.1f} s after the "
              f"database, {IN_FLIGHT} in-flight allocations finished "
              f"{settled:.1f} s after it", file=sys.stderr)
        case.assertEqual(uuids, sorted(a["uuid"] for a in final))
        case.assertEqual(["active"] * IN_FLIGHT,
                         [a["state"] for a in final])
        case.assertEqual(IN_FLIGHT, len({a["node_uuid"] for a in final}))

        # New work is accepted again.
        resp = self._post()
        case.assertEqual(201, resp.status_code, resp.text)
        log = self.server.log()
        case.assertNotIn("Traceback", log)
        case.assertIn("Database unavailable", log)


class PostgreSQLOutageTests(_OutageTests, testtools.TestCase):
    kind = "postgresql"


class MySQLOutageTests(_OutageTests, testtools.TestCase):
    kind = "mysql"


class UnreachableAtStartTests(testtools.TestCase):
    """No database at start-up: a one-line error and exit 1."""

    def test_serve_refuses_with_a_clear_message(self) -> None:
        port = free_port()  # nothing listens there
        url = f"postgresql+psycopg://nobody@127.0.0.1:{port}/none"
        result = launcher.run_cli("serve", "--port", str(port), "--db", url,
                                  timeout=60)
        self.assertEqual(1, result.returncode, result.stderr)
        self.assertIn(
            f"baremetal-alloc-server: cannot use the database {url}: ",
            result.stderr,
        )
        self.assertIn("Connection refused", result.stderr)
        self.assertNotIn("Traceback", result.stderr)
