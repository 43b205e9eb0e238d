"""``/metrics`` is an admin's, ``/healthcheck`` is public and follows the
database.

A project member reading ``/metrics`` would learn every project's fleet
(how many nodes of each class, how many allocations), so it is refused
as any admin-only route; ``/healthcheck`` is public as in Ironic, leaks
nothing but its verdict, and turns 503 within a few seconds of the
database going away (a loopback proxy in front of PostgreSQL is cut; the
shared database server is not touched), and 200 when it is back.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
import uuid
from typing import Any

import requests
import testtools

from baremetal_allocclient.tests.fixtures import credentials, databases
from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)
from baremetal_allocclient.tests.functional.multiprocess import _proxy

#: The promise: the check notices an outage within this long (the
#: database's connect timeout, plus one request), and recovery as fast.
NOTICE = 15.0


def _poll(url: str, status: int, within: float) -> tuple[float, Any]:
    """Seconds until ``url`` answers ``status`` (within ``within``)."""
    began = time.monotonic()
    last: Any = None
    while time.monotonic() - began < within:
        try:
            last = requests.get(url, timeout=within)
        except requests.RequestException as exc:
            last = exc
        else:
            if last.status_code == status:
                return time.monotonic() - began, last
        time.sleep(0.2)
    raise AssertionError(f"{url}: no {status} within {within} s: {last}")


class WhoReadsMetricsTests(testtools.TestCase):
    server: InProcessServer

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.server = serve_for_class(cls, http_basic=True)
        cls.server.make_nodes(2, "rc-metrics")

    def _get(self, path: str, user: str | None) -> requests.Response:
        auth = False if user is None else self.server.creds.auth(user)
        return self.server.request("GET", path, auth=auth)

    def test_an_admin_reads_the_fleet(self) -> None:
        self.server.expect(201, "POST", "/v1/allocations",
                           {"resource_class": "rc-metrics"})
        answer = self._get("/metrics", credentials.ADMIN)
        self.assertEqual(200, answer.status_code, answer.text)
        self.assertTrue(answer.headers["Content-Type"].startswith(
            "text/plain; version="))
        self.assertIn('baremetal_alloc_nodes{resource_class="rc-metrics",'
                      'state=', answer.text)
        self.assertIn("baremetal_alloc_http_requests_total{", answer.text)

    def test_a_member_or_nobody_reads_nothing(self) -> None:
        member = self._get("/metrics", credentials.ALICE)
        self.assertEqual(403, member.status_code)
        self.assertNotIn("baremetal_alloc", member.text)
        anonymous = self._get("/metrics", None)
        self.assertEqual(401, anonymous.status_code)
        self.assertNotIn("baremetal_alloc", anonymous.text)

    def test_the_health_check_is_public_and_says_nothing_more(self) -> None:
        for user in (None, credentials.ALICE):
            answer = self._get("/healthcheck", user)
            self.assertEqual(200, answer.status_code)
            self.assertEqual("OK", answer.text.strip())


class FrontEndClosesAreCountedTests(testtools.TestCase):
    """``baremetal_alloc_connections_closed_total`` counts the connections
    the front end closed on its own, by reason."""

    server: InProcessServer

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.server = serve_for_class(
            cls, "--request-timeout", "1", "--idle-timeout", "1",
            http_basic=True)

    def _closed(self) -> dict[str, float]:
        answer = self.server.request(
            "GET", "/metrics", auth=self.server.creds.auth(credentials.ADMIN))
        self.assertEqual(200, answer.status_code, answer.text)
        counts = {}
        for line in answer.text.splitlines():
            if line.startswith("baremetal_alloc_connections_closed_total{"):
                labels, value = line.rsplit(" ", 1)
                reason = labels.split('reason="')[1].split('"')[0]
                counts[reason] = float(value)
        return counts

    def _connect(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.server.port),
                                        timeout=10)
        self.addCleanup(sock.close)
        return sock

    def test_each_close_is_counted_by_its_reason(self) -> None:
        before = self._closed()
        stalled = self._connect()
        stalled.sendall(b"GET /v1 HT")  # never finished: 408
        kept = self._connect()
        kept.sendall(b"GET /v1 HTTP/1.1\r\nHost: x\r\n\r\n")
        refused = self._connect()
        refused.sendall(b"POST /v1 HTTP/1.1\r\nHost: x\r\n"
                        b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n")
        self.assertIn(b" 413 ", refused.recv(4096))
        self.assertIn(b" 408 ", stalled.recv(4096))
        answer = b""
        while chunk := kept.recv(4096):  # until closed at the idle timeout
            answer += chunk
        self.assertIn(b" 200 ", answer)
        after = self._closed()
        for reason in ("request_timeout", "idle_timeout", "refused"):
            self.assertEqual(1, after.get(reason, 0) - before.get(reason, 0),
                             (reason, before, after))


class HealthFollowsTheDatabaseTests(testtools.TestCase):
    """On PostgreSQL, through a proxy the test cuts."""

    def test_503_while_the_database_is_away_200_when_back(self) -> None:
        db = databases.scratch(self.addCleanup, "postgresql", schema=True)
        proxy, proxied = _proxy.in_front_of(db.url)
        self.addCleanup(proxy.stop)
        drain = os.path.join(tempfile.mkdtemp(prefix="bm-alloc-drain-"),
                             "drain")
        server = InProcessServer(proxied)
        self.addCleanup(server.cleanup)
        server.start("--healthcheck-disable-file", drain,
                     "--conductor-name", "health-" + uuid.uuid4().hex[:6])
        url = server.endpoint + "/healthcheck"
        self.assertEqual(200, requests.get(url, timeout=10).status_code)
        proxy.stop()
        noticed, answer = _poll(url, 503, NOTICE)
        self.assertEqual(["database unavailable", "OK"],
                         answer.text.splitlines())
        proxy.start()
        recovered, _answer = _poll(url, 200, NOTICE)
        print(f"\nhealthcheck: 503 after {noticed:.1f} s without the "
              f"database, 200 {recovered:.1f} s after it was back")
        open(drain, "w").close()  # draining: 503 whatever the database
        self.assertEqual(["OK", "DISABLED BY FILE"],
                         requests.get(url, timeout=10).text.splitlines())
