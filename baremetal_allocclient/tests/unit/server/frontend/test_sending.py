"""The I/O loop waits to send only what no request thread is sending
(``frontend.sending``), on a real front end over loopback."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import testtools

from baremetal_allocclient.server.frontend import options
from baremetal_allocclient.server.frontend import server as frontend
from baremetal_allocclient.server.frontend import waitress_internals as w
from baremetal_allocclient.server.frontend.deadline import DeadlineChannel

QUEUED = b"queued by a request thread\r\n"


@contextlib.contextmanager
def held(lock: Any, first: Callable[[], object] | None = None
         ) -> Iterator[None]:
    """``lock`` held by another thread (a request thread in a send),
    which calls ``first`` once it has taken it."""
    taken, done = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            if first is not None:
                first()
            taken.set()
            done.wait(30)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    taken.wait(30)
    try:
        yield
    finally:
        done.set()
        thread.join(30)


def queue(channel: Any, data: bytes = QUEUED) -> None:
    """Output queued on ``channel`` and not sent yet (the caller holds
    its lock, or no other thread uses it)."""
    w.queue_output(channel, data)  # (its lock is reentrant)


class _FrontEnd:
    """A front end on loopback whose application waits for ``release``."""

    def __init__(self) -> None:
        self.called, self.release = threading.Event(), threading.Event()
        self.front = frontend.FrontEnd(
            self._app, "127.0.0.1", 0,
            options.FrontEndOptions(4, 30.0, 30.0, 16),
            backlog=8, max_header=8192, max_body=8192)
        self.front.prepare()
        self.server = self.front.impl.servers[0]
        self.port = self.front.port
        self.thread = threading.Thread(target=self.front.serve, daemon=True)
        self.thread.start()

    def _app(self, environ: Any, start_response: Any) -> list[bytes]:
        self.called.set()
        self.release.wait(30)
        start_response("200 OK", [("Content-Length", "2")])
        return [b"ok"]

    def stop(self) -> None:
        self.release.set()
        self.front.stop()
        self.thread.join(30)


class WritableTests(testtools.TestCase):
    """``writable`` of a channel in each state, on a socket pair."""

    def setUp(self) -> None:
        super().setUp()
        front = _FrontEnd()
        self.addCleanup(front.stop)
        ours, theirs = socket.socketpair()
        self.addCleanup(theirs.close)
        self.channel = DeadlineChannel(front.server, ours, ("127.0.0.1", 1),
                                       front.server.adj, map={})
        self.addCleanup(self.channel.close)

    def test_nothing_queued_is_not_writable(self) -> None:
        self.assertFalse(self.channel.writable())

    def test_output_left_by_a_finished_request_is_sent_by_the_loop(
            self) -> None:
        queue(self.channel)
        self.assertTrue(self.channel.writable())
        with held(w.output_lock(self.channel)):
            self.assertTrue(self.channel.writable())

    def test_a_running_request_sending_its_output_keeps_the_loop_out(
            self) -> None:
        queue(self.channel)
        self.channel.requests = [object()]
        self.assertTrue(self.channel.writable())  # its thread is not in a send
        with held(w.output_lock(self.channel)):
            self.assertFalse(self.channel.writable())

    def test_closing_and_over_the_high_watermark_still_ask(self) -> None:
        queue(self.channel)
        self.channel.requests = [object()]
        with held(w.output_lock(self.channel)):
            w.close_when_sent(self.channel)
            self.assertTrue(self.channel.writable())
        self.channel.close_when_flushed = False
        over = b"x" * self.channel.adj.outbuf_high_watermark
        with held(w.output_lock(self.channel),
                  first=lambda: queue(self.channel, over)):
            self.assertTrue(self.channel.writable())


class LoopTests(testtools.TestCase):
    def test_the_loop_does_not_spin_while_a_request_thread_sends(
            self) -> None:
        """Output queued on a connection whose request is running, its
        lock held by another thread as a request thread's send holds it:
        waitress's own ``writable`` had the loop go round thousands of
        times a second, each time finding the lock taken.  Once the lock
        is free, the loop sends that output, before the request ends."""
        front = _FrontEnd()
        self.addCleanup(front.stop)
        client = socket.create_connection(("127.0.0.1", front.port),
                                          timeout=10)
        self.addCleanup(client.close)
        client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertTrue(front.called.wait(10))
        (channel,) = w.channels(front.server)
        rounds = []
        handle_write = channel.handle_write

        def counted() -> None:
            rounds.append(1)
            handle_write()

        channel.handle_write = counted

        def queue_and_wake() -> None:  # as write_soon does, lock held
            queue(channel)
            front.server.pull_trigger()

        with held(w.output_lock(channel), first=queue_and_wake):
            time.sleep(0.3)
            spun = len(rounds)
        self.assertLessEqual(spun, 2, "the loop went round while the "
                             "request thread held the output lock")
        # The lock free, the loop's next round sends it (within a
        # deadline check's interval), the request still running.
        got = b""
        client.settimeout(options.CHECK_INTERVAL + 5)
        while len(got) < len(QUEUED):
            got += client.recv(4096)
        self.assertEqual(QUEUED, got)
        front.release.set()
        answer = b""
        while not answer.endswith(b"ok"):
            chunk = client.recv(4096)
            self.assertTrue(chunk, "connection closed before the answer")
            answer += chunk
        self.assertIn(b"200 OK", answer)
