"""Slow clients hold no request thread and are cut off at a deadline.

Issue 20, item 4: 70 connections that each sent one header line every
3 s held all 64 request threads, and every other request timed out.
Here 200 such connections are open (three times the default threads)
while ordinary requests are timed, then each slow connection must be
closed once ``--request-timeout`` has passed since it was opened.  The
same holds while ``Prefer: wait`` creates hold their cap of threads.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import socket
import sys
import threading
import time

import requests
import testtools

from baremetal_allocclient.tests.fixtures.inprocess import InProcessServer

SLOW = 200  # slow connections, over three times the default 64 threads
DRIP = 2.0  # seconds between two header lines of a slow client
REQUEST_TIMEOUT = 6.0  # serve --request-timeout
PROMPT = 2.0  # an ordinary request is answered within this (loaded box)
_HEADERS = {"X-OpenStack-Ironic-API-Version": "latest"}


class _SlowClients:
    """``SLOW`` connections that send a header line every ``DRIP`` s."""

    def __init__(self, port: int, count: int = SLOW) -> None:
        self.socks = []
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(b"GET /v1/nodes HTTP/1.1\r\nHost: x\r\n")
            self.socks.append(sock)
        self.opened = time.monotonic()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._drip, daemon=True)
        self.thread.start()

    def _drip(self) -> None:
        # Bounded: at most the deadline plus a margin, whatever happens.
        for line in range(int((REQUEST_TIMEOUT + 15) / DRIP)):
            if self.stop.wait(DRIP):
                return
            for sock in self.socks:
                # Closed by the server: expected after the deadline.
                with contextlib.suppress(OSError):
                    sock.sendall(b"X-Slow-%d: y\r\n" % line)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        for sock in self.socks:
            sock.close()


class SlowClientTests(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.server = InProcessServer()
        self.addCleanup(self.server.cleanup)

    def _timed_get(self, path: str) -> tuple[int, float]:
        began = time.monotonic()
        try:
            response = requests.get(self.server.endpoint + path,
                                    headers=_HEADERS, timeout=10)
        except requests.RequestException:
            return 0, time.monotonic() - began
        return response.status_code, time.monotonic() - began

    def _closed_at(self, sock: socket.socket, until: float) -> float | None:
        """When the server closed ``sock`` (EOF or reset), or None."""
        sock.settimeout(max(0.01, until - time.monotonic()))
        try:
            while sock.recv(4096):
                pass
        except TimeoutError:
            return None
        except OSError:
            pass
        return time.monotonic()

    def _get_on(self, sock: socket.socket) -> bytes:
        """One whole ``GET /`` on a kept-alive connection; the answer."""
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(65536)
        head, _, body = answer.partition(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1]
                     .split(b"\r\n")[0])
        while len(body) < length:
            body += sock.recv(65536)
        return head

    def test_ordinary_requests_are_served_and_slow_ones_cut_off(self) -> None:
        self.server.start("--request-timeout", str(REQUEST_TIMEOUT))
        kept = socket.create_connection(("127.0.0.1", self.server.port),
                                        timeout=10)
        self.addCleanup(kept.close)
        self.assertIn(b" 200 ", self._get_on(kept))
        slow = _SlowClients(self.server.port)
        self.addCleanup(slow.close)
        time.sleep(DRIP * 1.5)  # every slow client has sent a second line
        answers = [self._timed_get("/"), self._timed_get("/v1/allocations")]
        print(f"\nwith {SLOW} slow connections: GET / {answers[0]}, "
              f"GET /v1/allocations {answers[1]}", file=sys.stderr)
        for status, latency in answers:
            self.assertEqual(200, status)
            self.assertLess(latency, PROMPT)
        until = slow.opened + REQUEST_TIMEOUT + 8
        closed = [self._closed_at(sock, until) for sock in slow.socks]
        self.assertNotIn(None, closed)
        earliest = min(c for c in closed if c is not None)
        # Not before the deadline (the drip kept every connection active).
        self.assertGreaterEqual(earliest - slow.opened, REQUEST_TIMEOUT - 0.5)
        self.assertEqual(200, self._timed_get("/")[0])
        # Idle longer than the deadline between two requests: not counted.
        self.assertIn(b" 200 ", self._get_on(kept))

    def test_served_while_waiting_creates_are_at_their_cap(self) -> None:
        threads, delay = 8, 4.0
        self.server.start("--request-timeout", str(REQUEST_TIMEOUT),
                          "--threads", str(threads),
                          "--allocation-delay", str(delay))
        self.server.make_nodes(threads, "rc-slow")

        def create(_index: int) -> requests.Response:
            return requests.post(
                self.server.endpoint + "/v1/allocations",
                json={"resource_class": "rc-slow"},
                headers={**_HEADERS, "Prefer": "wait=10"}, timeout=30)

        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            waiting = pool.map(create, range(threads))
            slow = _SlowClients(self.server.port, count=SLOW // 2)
            self.addCleanup(slow.close)
            time.sleep(DRIP * 0.75)  # within the allocation delay
            answers = [self._timed_get("/"),
                       self._timed_get("/v1/allocations")]
            created = list(waiting)
        print(f"\nwith waiting creates at their cap and {SLOW // 2} slow "
              f"connections: {answers}", file=sys.stderr)
        for status, latency in answers:
            self.assertEqual(200, status)
            self.assertLess(latency, PROMPT)
        self.assertEqual([201] * threads, [r.status_code for r in created])
        waited = [r for r in created if "Preference-Applied" in r.headers]
        self.assertEqual(threads // 2, len(waited))  # the cap was reached

    def test_idle_kept_alive_connection_is_closed(self) -> None:
        idle = 2.0
        self.server.start("--idle-timeout", str(idle))
        kept = socket.create_connection(("127.0.0.1", self.server.port),
                                        timeout=10)
        self.addCleanup(kept.close)
        self.assertIn(b" 200 ", self._get_on(kept))
        answered = time.monotonic()
        closed = self._closed_at(kept, answered + idle + 6)
        self.assertIsNotNone(closed)
        assert closed is not None
        self.assertGreaterEqual(closed - answered, idle - 0.5)
