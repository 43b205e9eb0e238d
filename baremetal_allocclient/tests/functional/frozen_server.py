"""A loopback HTTP server that accepts connections and never answers.

Tests of the client's time budget point a real client at it: every
connection is accepted and every request is read, then held without an
answer until :meth:`FrozenServer.close`.  Requests named in ``answers``
(e.g. ``GET /v1``) are forwarded to a real server instead and answered,
so a test can freeze a server *after* its extension discovery.  Each
request is recorded, answered or not.
"""

from __future__ import annotations

import http.client
import threading
import time
import urllib.parse
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: The requests of a discovery: the root document and ``GET /v1``.
DISCOVERY = frozenset({("GET", "/"), ("GET", "/v1")})


class FrozenServer:
    """Listens on 127.0.0.1:<port>; answers only ``answers`` (pairs of
    method and path without query), forwarded to ``upstream``."""

    def __init__(self, upstream: str | None = None,
                 answers: Iterable[tuple[str, str]] = ()) -> None:
        self.answers = frozenset(answers)
        if self.answers and upstream is None:
            raise ValueError("answering requests needs an upstream server")
        parsed = urllib.parse.urlsplit(upstream or "http://127.0.0.1:1")
        self._upstream = (parsed.hostname or "127.0.0.1", parsed.port or 80)
        self._lock = threading.Lock()
        self._released = threading.Event()
        self.seen: list[tuple[str, str]] = []
        self.first_request_at: float | None = None
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="frozen-server",
            daemon=True)
        self._thread.start()

    def requests(self, method: str | None = None) -> list[str]:
        """Paths (with query) of the requests seen, of one method or
        of all ("METHOD path")."""
        with self._lock:
            seen = list(self.seen)
        if method is None:
            return [f"{m} {p}" for m, p in seen]
        return [p for m, p in seen if m == method]

    def close(self) -> None:
        """Let the held requests go (their connections close without an
        answer) and stop listening."""
        self._released.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def _record(self, method: str, path: str) -> None:
        with self._lock:
            if self.first_request_at is None:
                self.first_request_at = time.monotonic()
            self.seen.append((method, path))

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes | None
                 ) -> None:
        upstream = http.client.HTTPConnection(*self._upstream, timeout=30)
        try:
            upstream.request(handler.command, handler.path, body,
                             dict(handler.headers.items()))
            answer = upstream.getresponse()
            payload = answer.read()
        finally:
            upstream.close()
        handler.send_response(answer.status)
        for key, value in answer.getheaders():
            if key.lower() not in ("content-length", "connection",
                                   "transfer-encoding", "keep-alive"):
                handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        frozen = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                path = urllib.parse.urlsplit(self.path).path.rstrip("/")
                frozen._record(self.command, self.path)
                if (self.command, path or "/") in frozen.answers:
                    frozen._forward(self, body)
                    return
                frozen._released.wait()
                self.close_connection = True

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any

            def log_message(self, *args: object) -> None:
                pass

        return Handler
