"""Slow clients hold no request thread and are cut off at a deadline.

Issue 20, item 4: 70 connections that each sent one header line every
3 s held all 64 request threads, and every other request timed out.
Here 200 such connections are open (three times the default threads)
while ordinary requests are timed, then each slow connection must be
closed once ``--request-timeout`` has passed since it was opened.  The
same holds while ``Prefer: wait`` creates hold their cap of threads.

Issue 52: connections sending only blank lines (``\r\n`` every 2 s)
were never closed, each blank line pair restarting the request clock
and each read the idle one; 20 of them held all 20 slots of
``--connection-limit 20``.  They are closed at ``--request-timeout``
from their opening, and a kept-alive connection that sends only blank
lines at ``--idle-timeout`` from its last answer, while a blank line
after a request (RFC 7230, section 3.5) starts no clock.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
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


class _BlankLines:
    """``count`` connections that send ``\r\n`` every ``every`` s and
    nothing else, for ``seconds`` at most."""

    def __init__(self, port: int, count: int, every: float,
                 seconds: float) -> None:
        self.socks = [socket.create_connection(("127.0.0.1", port),
                                               timeout=10)
                      for _ in range(count)]
        self.opened = time.monotonic()
        self.stop = threading.Event()
        self.thread = threading.Thread(
            target=self._drip, args=(every, seconds), daemon=True)
        self.thread.start()

    def _drip(self, every: float, seconds: float) -> None:
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            for sock in self.socks:
                with contextlib.suppress(OSError):  # closed by the server
                    sock.sendall(b"\r\n")
            if self.stop.wait(every):
                return

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        for sock in self.socks:
            sock.close()


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

    def _timed_get(self, path: str,
                   timeout: float = 10) -> tuple[int, float]:
        began = time.monotonic()
        try:
            response = requests.get(self.server.endpoint + path,
                                    headers=_HEADERS, timeout=timeout)
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
        return self._read_answer(sock)

    def _read_answer(self, sock: socket.socket) -> bytes:
        """The head of the next answer on ``sock``, its body read too
        (and nothing after it)."""
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(1)
        head = answer.partition(b"\r\n\r\n")[0]
        length = int(head.lower().split(b"content-length:")[1]
                     .split(b"\r\n")[0])
        body = b""
        while len(body) < length:
            body += sock.recv(length - len(body))
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

    def test_blank_lines_hold_no_slot_past_the_request_timeout(self) -> None:
        """20 connections sending only blank lines at a limit of 20: an
        ordinary request is answered once they are cut off, at the
        request timeout from their opening."""
        limit = 20
        self.server.start("--request-timeout", str(REQUEST_TIMEOUT),
                          "--connection-limit", str(limit))
        blank = _BlankLines(self.server.port, limit, every=1.0,
                            seconds=REQUEST_TIMEOUT + 20)
        self.addCleanup(blank.close)
        time.sleep(1.5)  # every one has sent a blank line pair
        status, _ = self._timed_get("/v1", REQUEST_TIMEOUT + 10)
        answered = time.monotonic() - blank.opened
        print(f"\nGET /v1 beside {limit} blank-line connections at a "
              f"limit of {limit}: {status} after {answered:.2f} s",
              file=sys.stderr)
        self.assertEqual(200, status)
        self.assertLess(answered, REQUEST_TIMEOUT + 4)
        # waitress counts its listening socket and its trigger against
        # the limit: the last two waited in the backlog until the others
        # were cut off, and their clock started then.
        until = blank.opened + 2 * REQUEST_TIMEOUT + 6
        closed = [self._closed_at(sock, until) for sock in blank.socks]
        self.assertNotIn(None, closed)
        earliest = min(c for c in closed if c is not None)
        self.assertGreaterEqual(earliest - blank.opened, REQUEST_TIMEOUT - 0.5)

    def test_blank_lines_after_an_answer_are_idle_time(self) -> None:
        """A kept-alive connection sending only blank lines and empty
        requests is closed at the idle timeout from its last answer; one
        that begins a request line is held to the request timeout from
        that request's first byte."""
        idle, request = 3.0, 2.0
        self.server.start("--idle-timeout", str(idle),
                          "--request-timeout", str(request))
        blank, line = (socket.create_connection(
            ("127.0.0.1", self.server.port), timeout=10) for _ in range(2))
        self.addCleanup(blank.close)
        self.addCleanup(line.close)
        self.assertIn(b" 200 ", self._get_on(blank))
        answered = time.monotonic()
        self.assertIn(b" 200 ", self._get_on(line))
        line.sendall(b"G")
        began = time.monotonic()
        stop = threading.Event()

        def drip() -> None:
            for piece in itertools.cycle((b"\r\n", b"\r\n\r\n", b" ")):
                with contextlib.suppress(OSError):
                    blank.sendall(piece)
                with contextlib.suppress(OSError):
                    line.sendall(b"E")
                if stop.wait(0.3):
                    return

        thread = threading.Thread(target=drip, daemon=True)
        thread.start()
        self.addCleanup(thread.join, 10)
        self.addCleanup(stop.set)
        line_closed = self._closed_at(line, began + request + 4)
        blank_closed = self._closed_at(blank, answered + idle + 4)
        stop.set()
        self.assertIsNotNone(line_closed)
        self.assertIsNotNone(blank_closed)
        assert line_closed is not None and blank_closed is not None
        self.assertGreaterEqual(line_closed - began, request - 0.5)
        self.assertGreaterEqual(blank_closed - answered, idle - 0.5)

    def test_a_blank_line_after_a_request_starts_no_clock(self) -> None:
        """RFC 7230, section 3.5: a client may send a blank line after a
        request.  Pipelined, both requests are answered; alone on a
        kept-alive connection, it does not start the request clock (a
        request sent after longer than the request timeout, within the
        idle one, is answered)."""
        request, idle = 1.5, 10.0
        self.server.start("--request-timeout", str(request),
                          "--idle-timeout", str(idle))
        sock = socket.create_connection(("127.0.0.1", self.server.port),
                                        timeout=10)
        self.addCleanup(sock.close)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n\r\n"
                     b"GET / HTTP/1.1\r\nHost: x\r\n\r\n\r\n")
        self.assertIn(b" 200 ", self._read_answer(sock))
        self.assertIn(b" 200 ", self._read_answer(sock))
        time.sleep(request + 2.5)  # past two deadline checks
        self.assertIn(b" 200 ", self._get_on(sock))
