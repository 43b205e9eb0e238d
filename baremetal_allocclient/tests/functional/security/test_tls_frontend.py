"""HTTPS through the front end's own TLS (server/frontend/tls.py).

Slow TLS clients, stalled before or after the handshake, hold no request
thread and are closed at ``--request-timeout``; keep-alive, pipelined
requests, large responses (sent from the request thread) and large and
chunked bodies work over TLS.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import sys
import threading
import time
import uuid
from collections.abc import Iterator

import requests
import testtools

from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)
from baremetal_allocclient.tests.functional.security import _support as sup

REQUEST_TIMEOUT = 4.0  # serve --request-timeout
STALLED = 60  # connections that never finish the handshake
DRIPPING = 40  # TLS connections that send a header line every second


class TlsFrontEndTests(testtools.TestCase):
    server: InProcessServer
    tls: sup.TlsFiles

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.server = serve_for_class(
            cls, "--threads", "8", "--request-timeout", str(REQUEST_TIMEOUT),
            tls=True)
        cls.tls = cls.server.tls

    def _tls_socket(self) -> ssl.SSLSocket:
        context = ssl.create_default_context(cafile=self.tls.ca)
        raw = socket.create_connection(("127.0.0.1", self.server.port),
                                       timeout=10)
        return context.wrap_socket(raw, server_hostname="127.0.0.1")

    def _read_until_closed(self, sock: socket.socket, until: float) -> bytes:
        """Everything the server sent until it closed; raises on timeout."""
        received = b""
        while True:
            sock.settimeout(max(0.01, until - time.monotonic()))
            try:
                chunk = sock.recv(65536)
            except (ssl.SSLError, ConnectionError):
                return received
            if not chunk:
                return received
            received += chunk

    def test_slow_tls_clients_hold_no_thread_and_time_out(self) -> None:
        stalled = [socket.create_connection(("127.0.0.1", self.server.port),
                                            timeout=10)
                   for _ in range(STALLED)]
        stalled[0].sendall(b"\x16\x03\x01")  # a ClientHello cut short
        dripping = [self._tls_socket() for _ in range(DRIPPING)]
        opened = time.monotonic()
        for sock in dripping:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        self.addCleanup(lambda: [s.close() for s in stalled + dripping])
        for line in range(2):
            time.sleep(1)
            for sock in dripping:
                sock.sendall(b"X-Slow-%d: y\r\n" % line)
        began = time.monotonic()
        response = self.server.request("GET", "/v1/nodes")
        latency = time.monotonic() - began
        print(f"\nHTTPS GET beside {STALLED + DRIPPING} slow clients: "
              f"{latency:.3f} s", file=sys.stderr)
        self.assertEqual(200, response.status_code)
        self.assertLess(latency, 2.0)
        until = opened + REQUEST_TIMEOUT + 8
        for sock in dripping:
            self.assertIn(b" 408 ", self._read_until_closed(sock, until))
        for sock in stalled:
            self.assertEqual(b"", self._read_until_closed(sock, until))
        self.assertGreaterEqual(time.monotonic() - opened,
                                REQUEST_TIMEOUT - 0.5)

    def test_keep_alive_pipelining_and_large_responses(self) -> None:
        rc = "rc-" + uuid.uuid4().hex[:8]
        self.server.make_nodes(30, rc)
        with requests.Session() as session:
            for _ in range(3):
                response = session.get(
                    self.server.endpoint + f"/v1/nodes?detail=True"
                    f"&resource_class={rc}", verify=self.tls.ca, timeout=30,
                    headers={"X-OpenStack-Ironic-API-Version": "latest"})
                self.assertEqual(200, response.status_code)
                self.assertEqual(30, len(response.json()["nodes"]))
                self.assertGreater(len(response.content), 20000)
        with self._tls_socket() as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 2
                         + b"GET / HTTP/1.1\r\nHost: x\r\n"
                           b"Connection: close\r\n\r\n")
            answers = self._read_until_closed(sock, time.monotonic() + 20)
        self.assertEqual(3, answers.count(b"HTTP/1.1 200 OK"))

    def test_large_and_chunked_bodies(self) -> None:
        body = {"resource_class": "rc", "extra": {"k": "x" * (1 << 20)}}
        response = self.server.request("POST", "/v1/allocations", body)
        self.assertEqual(413, response.status_code)

        def chunks() -> Iterator[bytes]:
            yield b'{"resource_class": "rc-tls", '
            yield b'"extra": {"k": "' + b"y" * 300000 + b'"}}'

        response = self.server.request(
            "POST", "/v1/allocations", data=chunks(),
            headers={"Content-Type": "application/json"})
        self.assertEqual(201, response.status_code, response.text)
        self.assertEqual(300000, len(response.json()["extra"]["k"]))

    def test_a_record_larger_than_one_read_is_drained(self) -> None:
        # One TLS record (up to 16 KiB) that one read (8 KiB) does not
        # empty: the rest is inside OpenSSL, and the socket does not
        # become readable again for it.
        body = json.dumps({"resource_class": "rc-tls",
                           "extra": {"k": "z" * 11000}}).encode()
        request = (b"POST /v1/allocations HTTP/1.1\r\nHost: x\r\n"
                   b"Content-Type: application/json\r\n"
                   b"X-OpenStack-Ironic-API-Version: 1.52\r\n"
                   b"Connection: close\r\n"
                   b"Content-Length: %d\r\n\r\n" % len(body)) + body
        self.assertLess(len(request), 16384)
        with self._tls_socket() as sock:
            began = time.monotonic()
            sock.sendall(request)
            answer = self._read_until_closed(
                sock, began + REQUEST_TIMEOUT / 2)
        self.assertIn(b" 201 ", answer.split(b"\r\n")[0])


class TlsConnectionLimitTests(testtools.TestCase):
    """Issue 52: every slot of ``--connection-limit`` taken by TLS
    connections stalled in the handshake, at each of its steps (nothing
    sent, a ClientHello cut short, a whole ClientHello and then silence,
    the server's answer read and the client's last flight never sent),
    or after it sending an empty request every second.  Each is closed
    at the request timeout from its acceptance, so an ordinary HTTPS
    client, waiting in the listen backlog behind them, is served within
    the request timeout plus a margin."""

    LIMIT = 20

    def setUp(self) -> None:
        super().setUp()
        self.server = InProcessServer()
        self.addCleanup(self.server.cleanup)
        self.tls = sup.write_tls(self.server.tmpdir)
        self.server.start("--request-timeout", str(REQUEST_TIMEOUT),
                          "--connection-limit", str(self.LIMIT), tls=self.tls)

    def _stalled(self, step: int) -> socket.socket:
        """A connection stalled at handshake ``step`` (0-3; 4: after the
        handshake, a blank line sent)."""
        sock = socket.create_connection(("127.0.0.1", self.server.port),
                                        timeout=10)
        self.addCleanup(sock.close)
        if step == 0:
            return sock
        if step == 4:
            context = ssl.create_default_context(cafile=self.tls.ca)
            tls = context.wrap_socket(sock, server_hostname="127.0.0.1")
            self.addCleanup(tls.close)
            tls.sendall(b"\r\n")
            return tls
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        client = ssl.create_default_context(cafile=self.tls.ca).wrap_bio(
            incoming, outgoing, server_hostname="127.0.0.1")
        with contextlib.suppress(ssl.SSLWantReadError):
            client.do_handshake()
        hello = outgoing.read()
        if step == 1:
            sock.sendall(hello[:len(hello) // 2])
            return sock
        sock.sendall(hello)
        while step == 3:  # the server's flight read; the client's kept
            incoming.write(sock.recv(65536))
            try:
                client.do_handshake()
            except ssl.SSLWantReadError:
                continue
            self.assertTrue(outgoing.pending)  # what is never sent
            break
        return sock

    def test_stalled_handshakes_at_the_limit_are_cut_at_the_deadline(
            self) -> None:
        opened = time.monotonic()
        # Those that wait for the server first: the last ones wait in
        # the backlog (waitress counts its listening socket and trigger
        # against the limit).
        stalled = [self._stalled(step) for step in sorted(
            (index % 5 for index in range(self.LIMIT)), reverse=True)]
        blank = [sock for sock in stalled if isinstance(sock, ssl.SSLSocket)]
        stop = threading.Event()

        def empty_requests() -> None:
            while not stop.wait(1.0):
                for sock in blank:
                    with contextlib.suppress(OSError):  # closed by then
                        sock.sendall(b"\r\n\r\n")

        thread = threading.Thread(target=empty_requests, daemon=True)
        thread.start()
        self.addCleanup(thread.join, 10)
        self.addCleanup(stop.set)
        response = self.server.request(
            "GET", "/v1", timeout=2 * REQUEST_TIMEOUT + 10)
        answered = time.monotonic() - opened
        print(f"\nHTTPS GET /v1 behind {self.LIMIT} stalled TLS connections "
              f"at a limit of {self.LIMIT}: {response.status_code} after "
              f"{answered:.2f} s", file=sys.stderr)
        self.assertEqual(200, response.status_code)
        self.assertLess(answered, REQUEST_TIMEOUT + 4)
        until = opened + 2 * REQUEST_TIMEOUT + 6
        for sock in stalled:
            sock.settimeout(max(0.01, until - time.monotonic()))
            with contextlib.suppress(ConnectionError, ssl.SSLError):
                while sock.recv(65536):
                    pass
        self.assertGreaterEqual(time.monotonic() - opened,
                                REQUEST_TIMEOUT - 0.5)
