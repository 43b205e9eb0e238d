"""Assemble, run and stop the waitress front end.

One I/O thread (:meth:`FrontEnd.serve`) runs waitress's loop over every
connection; ``threads`` request threads see only requests received in
full.  :meth:`FrontEnd.stop` closes the listening sockets and lets the
requests being served finish (at most ``SHUTDOWN_GRACE`` seconds).
"""

from __future__ import annotations

import contextlib
import logging
import resource
import ssl
import threading
import time
from typing import Any

from waitress import wasyncore
from waitress.adjustments import Adjustments

from baremetal_allocclient.server.domain.recording import (
    NOT_RECORDED,
    Recorder,
)
from baremetal_allocclient.server.frontend.deadline import DeadlineServer
from baremetal_allocclient.server.frontend.dispatch import RequestThreads
from baremetal_allocclient.server.frontend.options import FrontEndOptions
from baremetal_allocclient.server.frontend.paths import keep_encoded_slashes
from baremetal_allocclient.server.frontend.tls import TLSChannel

LOG = logging.getLogger(__name__)
#: File descriptors kept for everything but client connections (database
#: connections, the listening sockets, logs, temporary request bodies).
RESERVED_FILES = 256
CHECK_INTERVAL = 1.0  # seconds between two deadline checks
SHUTDOWN_GRACE = 30.0  # longest wait for running requests on stop
#: Bytes of a request being received, or of an answer the client has not
#: taken yet, kept in memory per connection; the rest goes to a temporary
#: file (waitress keeps 512 KiB and 1 MiB: 300 stalled half-sent bodies
#: held 155 MB, 400 answers of 0.4 MB nobody read 126 MB; with 64 KiB,
#: see doc/source/internals/benchmarks.rst).
IN_MEMORY = 64 * 1024
IDENT = "baremetal-alloc-server"


def raise_open_file_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard one; return the soft."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as exc:
            LOG.warning("Cannot raise the open-file limit from %d to %d: "
                        "%s", soft, hard, exc)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def connection_limit(wanted: int, open_files: int) -> int:
    """``wanted``, lowered to what ``open_files`` descriptors allow."""
    allowed = max(1, open_files - RESERVED_FILES)
    if wanted > allowed:
        LOG.warning("--connection-limit %d lowered to %d: the open-file "
                    "limit is %d", wanted, allowed, open_files)
        return allowed
    return wanted


class FrontEnd:
    """waitress over ``app`` on ``host``:``port`` (bound by prepare)."""

    def __init__(self, app: Any, host: str, port: int,
                 options: FrontEndOptions, *, backlog: int,
                 max_header: int, max_body: int,
                 tls_context: ssl.SSLContext | None = None,
                 recorder: Recorder = NOT_RECORDED) -> None:
        self.app = keep_encoded_slashes(app)
        self.recorder = recorder
        self.tls_context = tls_context
        self.request_timeout = options.request_timeout
        self.idle_timeout = options.idle_timeout
        self.adj = Adjustments(
            host=host, port=port, threads=options.threads,
            connection_limit=connection_limit(
                options.connection_limit, raise_open_file_limit()),
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
        self.map: dict[int, Any] = {}
        self.servers: list[DeadlineServer] = []
        self.dispatcher = RequestThreads()
        self.stopping = threading.Event()

    def prepare(self) -> None:
        """Bind and listen on every address; OSError when one fails."""
        try:
            listen: list[Any] = list(self.adj.listen)
            for sockinfo in listen:
                server = DeadlineServer(
                    self.app, self.map, dispatcher=self.dispatcher,
                    adj=self.adj, sockinfo=sockinfo)
                server.request_timeout = self.request_timeout
                server.idle_timeout = self.idle_timeout
                server.recorder = self.recorder
                if self.tls_context is not None:
                    server.channel_class = TLSChannel
                    server.tls_context = self.tls_context  # type: ignore[attr-defined]
                self.servers.append(server)
        except OSError:
            wasyncore.close_all(self.map)
            raise
        self.dispatcher.set_thread_count(self.adj.threads)

    def serve(self) -> None:
        """Run the I/O loop until :meth:`stop`, then drain (I/O thread).
        The deadlines are checked between two of its rounds, at least
        every ``CHECK_INTERVAL``."""
        checked = time.monotonic()
        while not self.stopping.is_set():
            wasyncore.loop(timeout=CHECK_INTERVAL, map=self.map,
                           use_poll=True, count=1)
            now = time.monotonic()
            if now - checked >= CHECK_INTERVAL:
                checked = now
                for server in self.servers:
                    server.check_deadlines(now)
        self._drain(time.monotonic() + SHUTDOWN_GRACE)

    def stop(self) -> None:
        """Ask the I/O thread to stop accepting and drain.  The trigger
        only wakes it sooner: with the trigger closed (waitress closes it
        whenever it closes a listening socket) it is not pulled, since
        its descriptor number may be another file's by now, and the loop
        notices within ``CHECK_INTERVAL``."""
        self.stopping.set()
        if self.servers:
            trigger: Any = self.servers[0].trigger  # (typed as int)
            if not trigger._closed:  # (waitress's own flag)
                with contextlib.suppress(OSError):  # closed meanwhile
                    trigger.pull_trigger()

    def _drain(self, deadline: float) -> None:
        for server in self.servers:
            server.accepting = False
            wasyncore.dispatcher.close(server)  # the trigger stays
        while time.monotonic() < deadline and self._close_idle():
            wasyncore.loop(timeout=0.1, map=self.map, use_poll=True,
                           count=1)
        self.dispatcher.shutdown(cancel_pending=True, timeout=5)
        wasyncore.close_all(self.map)

    def _close_idle(self) -> int:
        """Close connections with no request being served; how many are
        still serving one."""
        busy = 0
        for server in self.servers:
            channels: dict[int, Any] = server.active_channels  # type: ignore[assignment]
            for channel in list(channels.values()):
                if channel.requests or channel.total_outbufs_len:
                    busy += 1
                else:
                    channel.will_close = True
        return busy
