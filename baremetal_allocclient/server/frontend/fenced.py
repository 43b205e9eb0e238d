"""The front end on waitress's internals: deadlines, TLS, no-spin sends.

One I/O thread (:meth:`FencedFrontEnd.serve`) runs waitress's loop over
every connection; ``threads`` request threads see only requests
received in full.  :meth:`FencedFrontEnd.stop` closes the listening
sockets and lets the requests being served finish (at most
``SHUTDOWN_GRACE`` seconds).  Imported only when
:data:`.waitress_internals.MISSING` is empty: its modules extend
waitress's classes.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable
from typing import Any

from baremetal_allocclient.server.domain.recording import (
    NOT_RECORDED,
    Recorder,
)
from baremetal_allocclient.server.frontend import waitress_internals as w
from baremetal_allocclient.server.frontend.deadline import DeadlineServer
from baremetal_allocclient.server.frontend.dispatch import RequestThreads
from baremetal_allocclient.server.frontend.options import (
    CHECK_INTERVAL,
    IDENT,
    IN_MEMORY,
    SHUTDOWN_GRACE,
    FrontEndOptions,
)
from baremetal_allocclient.server.frontend.tls import TLSChannel


class FencedFrontEnd:
    """waitress with the deadlines over ``app`` on ``host``:``port``
    (bound by prepare)."""

    def __init__(self, app: Callable[..., Any], host: str, port: int,
                 options: FrontEndOptions, *, backlog: int,
                 max_header: int, max_body: int,
                 tls_context: ssl.SSLContext | None = None,
                 recorder: Recorder = NOT_RECORDED) -> None:
        self.app = app
        self.recorder = recorder
        self.tls_context = tls_context
        self.request_timeout = options.request_timeout
        self.idle_timeout = options.idle_timeout
        self.adj = w.adjustments(
            host=host, port=port, threads=options.threads,
            connection_limit=options.connection_limit,
            # waitress's channel_timeout and cleanup_interval are not
            # used: the deadlines (deadline.py) replace its maintenance.
            asyncore_use_poll=True,  # select() stops at 1024 descriptors
            backlog=backlog, ident=IDENT,
            # The request thread sends what it can of the response at
            # once instead of leaving it all to the I/O thread (waitress
            # waits for 18,000 bytes); see doc/source/benchmarks.rst.
            send_bytes=1,
            inbuf_overflow=IN_MEMORY, outbuf_overflow=IN_MEMORY,
            max_request_header_size=max_header,
            max_request_body_size=max_body,
            url_scheme="https" if tls_context else "http",
        )
        self.threads = options.threads
        self.map: dict[int, Any] = {}
        self.servers: list[DeadlineServer] = []
        self.dispatcher = RequestThreads()
        self.stopping = threading.Event()

    def prepare(self) -> None:
        """Bind and listen on every address; OSError when one fails."""
        try:
            for address in w.listen_addresses(self.adj):
                server = w.new_server(DeadlineServer, self.app, self.map,
                                      self.dispatcher, self.adj, address)
                server.request_timeout = self.request_timeout
                server.idle_timeout = self.idle_timeout
                server.recorder = self.recorder
                if self.tls_context is not None:
                    server.channel_class = TLSChannel
                    server.tls_context = self.tls_context
                self.servers.append(server)
        except OSError:
            w.close_all(self.map)
            raise
        self.dispatcher.set_thread_count(self.threads)

    def port(self) -> int:
        """The port listened on (after :meth:`prepare`)."""
        return w.bound_port(self.servers[0])

    def serve(self) -> None:
        """Run the I/O loop until :meth:`stop`, then drain (I/O thread).
        The deadlines are checked between two of its rounds, at least
        every ``CHECK_INTERVAL``."""
        checked = time.monotonic()
        while not self.stopping.is_set():
            w.run_once(self.map, CHECK_INTERVAL)
            now = time.monotonic()
            if now - checked >= CHECK_INTERVAL:
                checked = now
                for server in self.servers:
                    server.check_deadlines(now)
        self._drain(time.monotonic() + SHUTDOWN_GRACE)

    def stop(self) -> None:
        """Ask the I/O thread to stop accepting and drain.  Waking it
        only makes that sooner (it is not woken once waitress closed its
        trigger); the loop notices within ``CHECK_INTERVAL``."""
        self.stopping.set()
        if self.servers:
            w.wake(self.servers[0])

    def _drain(self, deadline: float) -> None:
        for server in self.servers:
            w.stop_accepting(server)
        while time.monotonic() < deadline and self._close_idle():
            w.run_once(self.map, 0.1)
        self.dispatcher.shutdown(cancel_pending=True, timeout=5)
        w.close_all(self.map)

    def _close_idle(self) -> int:
        """Close connections with no request being served; how many are
        still serving one."""
        busy = 0
        for server in self.servers:
            for channel in w.channels(server):
                if w.request_running(channel) or w.output_pending(channel):
                    busy += 1
                else:
                    w.close_soon(channel)
        return busy
