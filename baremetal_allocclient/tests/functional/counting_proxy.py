"""A loopback HTTP proxy that records every request it forwards.

Tests put it between a real client and a target to count the requests a
command makes.  The ``Host`` header is forwarded unchanged, so links in
the answers point back at the proxy and followed links are counted too.
"""

from __future__ import annotations

import http.client
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_HOP_BY_HOP = frozenset((
    "connection", "keep-alive", "proxy-connection", "transfer-encoding",
    "te", "trailer", "upgrade",
))


class CountingProxy:
    """Forwards 127.0.0.1:<port> to ``target`` (an http:// URL) and
    records ``(method, path?query, status)`` of each request."""

    def __init__(self, target: str) -> None:
        parsed = urllib.parse.urlsplit(target)
        self._target = (parsed.hostname or "127.0.0.1", parsed.port or 80)
        self._lock = threading.Lock()
        self._seen: list[tuple[str, str, int]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="counting-proxy",
            daemon=True)
        self._thread.start()

    def take(self) -> list[tuple[str, str, int]]:
        """The requests seen since the last call, in arrival order."""
        with self._lock:
            seen, self._seen = self._seen, []
        return seen

    def close(self) -> None:
        """Stop listening."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def _record(self, method: str, path: str, status: int) -> None:
        with self._lock:
            self._seen.append((method, path, status))

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in _HOP_BY_HOP}
                upstream = http.client.HTTPConnection(*proxy._target,
                                                      timeout=120)
                try:
                    upstream.request(self.command, self.path, body, headers)
                    answer = upstream.getresponse()
                    payload = answer.read()
                    proxy._record(self.command, self.path, answer.status)
                    self.send_response(answer.status)
                    for key, value in answer.getheaders():
                        if key.lower() not in _HOP_BY_HOP | {
                                "content-length"}:
                            self.send_header(key, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(payload)
                finally:
                    upstream.close()

            do_GET = do_POST = do_PUT = do_PATCH = _forward
            do_DELETE = do_HEAD = _forward

            def log_message(self, *args: Any) -> None:
                """Quiet: the test reports what it counted."""

        return Handler
