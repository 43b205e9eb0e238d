"""The deadlines of a connection (``frontend.deadline``): the verdict in
each phase, and a request thread waiting for a client that never reads,
on a real front end over loopback."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import testtools

from baremetal_allocclient.server.frontend import options
from baremetal_allocclient.server.frontend import server as frontend
from baremetal_allocclient.server.frontend.deadline import (
    State,
    Verdict,
    verdict,
)

REQUEST, IDLE = 30.0, 60.0
FRESH = State(opened=100.0, delivered=False, serving=False, began=None,
              idle_since=None, closing=False, stalled=0.0)


def _at(state: State, now: float) -> Verdict:
    return verdict(state, now, REQUEST, IDLE)


class VerdictTests(testtools.TestCase):
    def test_a_first_request_counts_from_the_opening(self) -> None:
        self.assertEqual(Verdict.KEEP, _at(FRESH, 129.0))
        self.assertEqual(Verdict.TIME_OUT, _at(FRESH, 131.0))
        # Whatever arrived meanwhile: blank lines leave began unset, a
        # request line sets it later than the opening.
        began = dataclasses.replace(FRESH, began=125.0)
        self.assertEqual(Verdict.TIME_OUT, _at(began, 131.0))

    def test_a_later_request_counts_from_its_first_byte(self) -> None:
        kept = dataclasses.replace(FRESH, delivered=True, idle_since=200.0,
                                   began=250.0)
        self.assertEqual(Verdict.KEEP, _at(kept, 279.0))  # idle would be 79
        self.assertEqual(Verdict.TIME_OUT, _at(kept, 281.0))

    def test_idle_counts_from_the_last_answer(self) -> None:
        idle = dataclasses.replace(FRESH, delivered=True, idle_since=200.0)
        self.assertEqual(Verdict.KEEP, _at(idle, 259.0))
        self.assertEqual(Verdict.CLOSE, _at(idle, 261.0))

    def test_serving_is_bounded_only_while_the_client_takes_nothing(
            self) -> None:
        serving = dataclasses.replace(FRESH, delivered=True, serving=True)
        self.assertEqual(Verdict.KEEP, _at(serving, 10_000.0))
        stalled = dataclasses.replace(serving, stalled=IDLE + 1)
        self.assertEqual(Verdict.CLOSE, _at(stalled, 150.0))

    def test_a_closing_connection_is_closed_at_the_idle_timeout(
            self) -> None:
        timed_out = dataclasses.replace(FRESH, closing=True, idle_since=131.0)
        self.assertEqual(Verdict.KEEP, _at(timed_out, 190.0))  # no 408 again
        self.assertEqual(Verdict.CLOSE, _at(timed_out, 192.0))
        told = dataclasses.replace(FRESH, closing=True)
        self.assertEqual(Verdict.CLOSE, _at(told, 161.0))


class _Streaming:
    """A front end with one request thread whose application streams
    ``CHUNKS`` MiB, more than waitress's high watermark (16 MiB)."""

    CHUNKS = 40

    def __init__(self, idle: float) -> None:
        self.ended = threading.Event()
        self.front = frontend.FrontEnd(
            self._app, "127.0.0.1", 0,
            options.FrontEndOptions(1, 30.0, idle, 16),
            backlog=8, max_header=8192, max_body=8192)
        self.front.prepare()
        self.port = self.front.port
        self.thread = threading.Thread(target=self.front.serve, daemon=True)
        self.thread.start()

    def _app(self, environ: Any, start_response: Any) -> Iterator[bytes]:
        if environ["PATH_INFO"] != "/large":
            start_response("200 OK", [("Content-Length", "2")])
            yield b"ok"
            return
        start_response("200 OK",
                       [("Content-Length", str(self.CHUNKS << 20))])
        try:
            for _ in range(self.CHUNKS):
                yield b"x" * (1 << 20)
        finally:
            self.ended.set()

    def stop(self) -> None:
        self.front.stop()
        self.thread.join(60)


class UnreadAnswerTests(testtools.TestCase):
    def test_a_request_thread_waiting_for_a_reader_is_released(
            self) -> None:
        """A client that never reads an answer over the high watermark
        held the request thread writing it for good (waitress closes
        only connections with no request running).  It is closed once it
        took nothing for the idle timeout; the thread's request ends and
        the one thread serves the next client."""
        idle = 2.0
        front = _Streaming(idle)
        self.addCleanup(front.stop)
        reader = socket.socket()
        self.addCleanup(reader.close)
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        reader.connect(("127.0.0.1", front.port))
        reader.sendall(b"GET /large HTTP/1.1\r\nHost: x\r\n\r\n")
        sent = time.monotonic()
        self.assertTrue(front.ended.wait(idle + 2 * options.CHECK_INTERVAL
                                         + 5))
        self.assertGreaterEqual(time.monotonic() - sent, idle - 0.5)
        with socket.create_connection(("127.0.0.1", front.port),
                                      timeout=10) as other:
            other.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = b""
            while not answer.endswith(b"ok"):
                chunk = other.recv(4096)
                self.assertTrue(chunk, "closed before the answer")
                answer += chunk
        self.assertIn(b"200 OK", answer)
