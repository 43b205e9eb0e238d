"""The front end on waitress's documented API only (the fallback).

Used when the installed waitress lacks one of the internals the fenced
front end needs (:data:`.waitress_internals.MISSING`), or when
``BAREMETAL_ALLOC_STOCK_WAITRESS`` is set (tests, measurements).  The
listening sockets are bound here and handed to ``waitress.create_server``
(its ``sockets`` argument), whose documented arguments carry the
options: ``--idle-timeout`` becomes waitress's ``channel_timeout`` (a
connection with no request running that sent and took nothing for that
long is closed).  ``--request-timeout`` has no counterpart.

Stopping: waitress documents no way to stop its loop from another
thread (and closing its sockets from one could close another file that
took a closed descriptor's number), so :meth:`StockFrontEnd.stop` only
has :class:`Gate` answer new requests 503 and waits for the running
ones; the loop runs in a daemon thread and its sockets stay open until
the process exits.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from waitress.server import create_server

from baremetal_allocclient.server.frontend.options import (
    CHECK_INTERVAL,
    IDENT,
    IN_MEMORY,
    SHUTDOWN_GRACE,
    FrontEndOptions,
)

Wsgi = Callable[[dict[str, Any], Any], Iterable[bytes]]
_STOPPING = b"The server is stopping.\r\n"


class Gate:
    """``app``, counting the requests in it; once :meth:`close` d,
    answering 503 instead.  A request counts until the application
    returns a list or tuple (waitress then writes what is made), or
    until a streamed answer's iterable is closed."""

    def __init__(self, app: Wsgi) -> None:
        self.app = app
        self.changed = threading.Condition()
        self.running = 0
        self.closed = False

    def __call__(self, environ: dict[str, Any], start_response: Any
                 ) -> Iterable[bytes]:
        with self.changed:
            if self.closed:
                start_response("503 Service Unavailable", [
                    ("Content-Type", "text/plain; charset=utf-8"),
                    ("Content-Length", str(len(_STOPPING)))])
                return [_STOPPING]
            self.running += 1
        try:
            answer = self.app(environ, start_response)
        except BaseException:
            self._done()
            raise
        if isinstance(answer, (list, tuple)):
            self._done()
            return answer
        return self._streamed(answer)

    def _streamed(self, answer: Iterable[bytes]) -> Iterator[bytes]:
        try:
            yield from answer
        finally:
            with contextlib.suppress(Exception):
                close = getattr(answer, "close", None)
                if close is not None:
                    close()
            self._done()

    def _done(self) -> None:
        with self.changed:
            self.running -= 1
            self.changed.notify_all()

    def close(self) -> None:
        """Answer 503 to every request from now on."""
        with self.changed:
            self.closed = True

    def wait_idle(self, deadline: float) -> bool:
        """Wait until no request runs, or ``deadline`` (monotonic)."""
        with self.changed:
            return self.changed.wait_for(
                lambda: self.running == 0,
                max(0.0, deadline - time.monotonic()))


def bind(host: str, port: int) -> list[socket.socket]:
    """A socket bound (not listening) on each address of ``host``."""
    bound: list[socket.socket] = []
    try:
        for family, kind, proto, _name, address in socket.getaddrinfo(
                host, port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0,
                socket.AI_PASSIVE):
            sock = socket.socket(family, kind, proto)
            bound.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
    except OSError:
        for sock in bound:
            sock.close()
        raise
    return bound


class StockFrontEnd:
    """Stock waitress over ``app`` on ``host``:``port`` (bound by
    prepare); plain HTTP only."""

    def __init__(self, app: Wsgi, host: str, port: int,
                 options: FrontEndOptions, *, backlog: int,
                 max_header: int, max_body: int,
                 tls_context: ssl.SSLContext | None = None) -> None:
        self.gate = Gate(app)
        self.host, self.wanted_port = host, port
        self.tls = tls_context is not None
        idle = max(1, round(options.idle_timeout))
        self.arguments: dict[str, Any] = {
            "threads": options.threads,
            "connection_limit": options.connection_limit,
            "channel_timeout": idle,
            "cleanup_interval": max(1, min(30, idle // 2)),
            "asyncore_use_poll": True, "backlog": backlog, "ident": IDENT,
            "inbuf_overflow": IN_MEMORY, "outbuf_overflow": IN_MEMORY,
            "max_request_header_size": max_header,
            "max_request_body_size": max_body,
        }
        self.sockets: list[socket.socket] = []
        self.server: Any = None
        self.stopping = threading.Event()

    def prepare(self) -> None:
        """Bind and listen on every address; OSError when one fails or
        TLS is asked for (stock waitress has none)."""
        if self.tls:
            raise OSError("TLS (--tls-cert) is served only on waitress's "
                          "internals, which this waitress lacks; put a "
                          "TLS proxy in front, or install the tested "
                          "waitress")
        self.sockets = bind(self.host, self.wanted_port)
        try:
            self.server = create_server(
                self.gate, sockets=self.sockets, **self.arguments)
        except BaseException:
            for sock in self.sockets:
                sock.close()
            raise

    def port(self) -> int:
        """The port listened on (after :meth:`prepare`)."""
        port: int = self.sockets[0].getsockname()[1]
        return port

    def serve(self) -> None:
        """Run waitress's loop (a daemon thread) until :meth:`stop`, then
        wait for the running requests (at most ``SHUTDOWN_GRACE``)."""
        loop = threading.Thread(target=self.server.run, name="http-loop",
                                daemon=True)
        loop.start()
        while not self.stopping.wait(CHECK_INTERVAL):
            if not loop.is_alive():
                raise RuntimeError("waitress's loop ended")
        self.gate.wait_idle(time.monotonic() + SHUTDOWN_GRACE)

    def stop(self) -> None:
        """Answer 503 to new requests and have :meth:`serve` return once
        the running ones are done."""
        self.gate.close()
        self.stopping.set()
