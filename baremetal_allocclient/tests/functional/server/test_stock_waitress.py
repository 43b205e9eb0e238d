"""``serve`` on stock waitress (the fallback for a waitress without the
internals the deadlines use, forced here by the environment variable
``BAREMETAL_ALLOC_STOCK_WAITRESS``): real requests over loopback, the
limits and the idle timeout kept, the request deadline lost as
documented, a graceful stop, TLS refused."""

from __future__ import annotations

import concurrent.futures
import signal
import socket
import time

import requests
import testtools

from baremetal_allocclient.server.frontend.server import STOCK_ENV
from baremetal_allocclient.tests.fixtures import credentials
from baremetal_allocclient.tests.fixtures.launcher import ServerProcess

STOCK = {STOCK_ENV: "1"}
DELAY = 2.0  # serve --allocation-delay
IDLE = 2.0  # serve --idle-timeout (and --request-timeout)


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closes ``sock`` within ``seconds`` (what it
    sends before is read and dropped)."""
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except OSError:
        pass
    return True


class StockWaitressTests(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.server = ServerProcess()
        self.addCleanup(self.server.cleanup)
        self.server.upgrade()
        self.server.start(
            "--allocation-delay", str(DELAY), "--idle-timeout", str(IDLE),
            "--request-timeout", str(IDLE), env=STOCK)

    def test_the_api_is_served_with_a_warning(self) -> None:
        log = self.server.log()
        self.assertIn("Serving with stock waitress", log)
        self.assertIn(f"{STOCK_ENV} is set", log)
        self.assertIn("--request-timeout", log)
        self.server.make_nodes(2, "rc-stock")
        created = self.server.expect(
            201, "POST", "/v1/allocations", {"resource_class": "rc-stock"},
            headers={"Prefer": "wait=10"})
        self.assertEqual("active", created["state"])
        listed = self.server.expect(200, "GET", "/v1/allocations")
        self.assertEqual([created["uuid"]],
                         [a["uuid"] for a in listed["allocations"]])
        self.server.expect(204, "DELETE", f"/v1/allocations/{created['uuid']}")
        # waitress's own limits, from serve's options.
        response = self.server.request("GET", "/v1/nodes",
                                       headers={"X-Big": "a" * 100_000})
        self.assertEqual(431, response.status_code)
        response = self.server.request(
            "POST", "/v1/allocations", data=iter([b"x" * (1 << 20)] * 3),
            headers={"Content-Type": "application/json"})
        self.assertEqual(413, response.status_code)

    def test_idle_is_closed_but_blank_lines_keep_a_connection(self) -> None:
        """--idle-timeout is waitress's channel_timeout: a silent
        connection is closed.  Without the deadlines, a client sending a
        blank line every second is not (no 408 at --request-timeout)."""
        with socket.create_connection(("127.0.0.1", self.server.port),
                                      timeout=10) as silent, \
                socket.create_connection(("127.0.0.1", self.server.port),
                                         timeout=10) as blank:
            until = time.monotonic() + 2 * IDLE + 2
            while time.monotonic() < until:
                blank.sendall(b"\r\n")
                self.assertFalse(_closed_within(blank, 0.5))
            self.assertTrue(_closed_within(silent, 5))

    def test_a_stop_lets_the_running_request_finish(self) -> None:
        self.server.make_nodes(1, "rc-stop")
        proc = self.server.proc
        assert proc is not None
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(
                self.server.request, "POST", "/v1/allocations",
                {"resource_class": "rc-stop"}, headers={"Prefer": "wait=10"})
            time.sleep(DELAY / 4)  # the create is being served
            proc.send_signal(signal.SIGTERM)
            time.sleep(DELAY / 4)
            late = self.server.request("GET", "/v1/nodes", timeout=5)
            response = waiting.result(timeout=30)
        self.assertEqual(503, late.status_code)
        self.assertEqual(201, response.status_code, response.text)
        self.assertEqual("active", response.json()["state"])
        self.assertEqual(0, proc.wait(timeout=30), self.server.log())


class StockTlsTests(testtools.TestCase):
    def test_tls_is_refused(self) -> None:
        server = ServerProcess()
        self.addCleanup(server.cleanup)
        server.upgrade()
        tls = credentials.write_tls(server.tmpdir)
        server.launch(*tls.serve_options(), env=STOCK)
        assert server.proc is not None
        self.assertEqual(1, server.proc.wait(timeout=60), server.log())
        self.assertIn("TLS (--tls-cert) is served only on waitress's "
                      "internals", server.log())
        self.assertRaises(requests.ConnectionError, requests.get,
                          f"https://127.0.0.1:{server.port}/", timeout=5)
