"""Assemble, run and stop the front end: waitress with the deadlines
(:mod:`.fenced`) when the installed waitress has every internal piece
they use (:mod:`.waitress_internals`), stock waitress (:mod:`.stock`)
otherwise, with a warning naming what is missing and what is lost.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import resource
import ssl
from typing import Any

from baremetal_allocclient.server.domain.recording import (
    NOT_RECORDED,
    Recorder,
)
from baremetal_allocclient.server.frontend import stock
from baremetal_allocclient.server.frontend import waitress_internals as w
from baremetal_allocclient.server.frontend.options import FrontEndOptions
from baremetal_allocclient.server.frontend.paths import keep_encoded_slashes

LOG = logging.getLogger(__name__)
#: File descriptors kept for everything but client connections (database
#: connections, the listening sockets, logs, temporary request bodies).
RESERVED_FILES = 256
#: Set (to anything but empty) to serve with stock waitress although the
#: tested one is installed: for the tests and measurements of the fallback.
STOCK_ENV = "BAREMETAL_ALLOC_STOCK_WAITRESS"
LOST = ("a request need not arrive within --request-timeout (a client "
        "sending a byte now and then keeps its connection for good; no "
        "408), a client that does not read its answer keeps it and its "
        "connection, the I/O loop may go round while a request thread "
        "sends, request threads are woken in turn, TLS is refused, and "
        "on stop new requests are answered 503 until the process exits")


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


def stock_reason() -> str | None:
    """Why the front end is stock waitress; None when it is not."""
    if w.MISSING:
        return (f"waitress {w.version()} (tested: {w.TESTED}) lacks "
                + ", ".join(w.MISSING))
    if os.environ.get(STOCK_ENV):
        return f"{STOCK_ENV} is set"
    return None


class FrontEnd:
    """The HTTP server over ``app`` on ``host``:``port`` (bound by
    :meth:`prepare`, run by :meth:`serve` in a thread of its own, ended
    by :meth:`stop` from another)."""

    def __init__(self, app: Any, host: str, port: int,
                 options: FrontEndOptions, *, backlog: int,
                 max_header: int, max_body: int,
                 tls_context: ssl.SSLContext | None = None,
                 recorder: Recorder = NOT_RECORDED) -> None:
        options = dataclasses.replace(options, connection_limit=(
            connection_limit(options.connection_limit,
                             raise_open_file_limit())))
        arguments: dict[str, Any] = {
            "backlog": backlog, "max_header": max_header,
            "max_body": max_body, "tls_context": tls_context}
        self.stock_reason = stock_reason()
        if self.stock_reason is None:
            from baremetal_allocclient.server.frontend import fenced

            self.impl: Any = fenced.FencedFrontEnd(
                keep_encoded_slashes(app), host, port, options,
                recorder=recorder, **arguments)
        else:
            LOG.warning("Serving with stock waitress: %s. Lost: %s.",
                        self.stock_reason, LOST)
            self.impl = stock.StockFrontEnd(
                keep_encoded_slashes(app), host, port, options, **arguments)

    def prepare(self) -> None:
        """Bind and listen on every address; OSError when one fails."""
        self.impl.prepare()

    @property
    def port(self) -> int:
        """The port listened on (after :meth:`prepare`)."""
        port: int = self.impl.port()
        return port

    def serve(self) -> None:
        """Serve until :meth:`stop`, then let the running requests
        finish (at most ``SHUTDOWN_GRACE`` seconds)."""
        self.impl.serve()

    def stop(self) -> None:
        """Stop accepting requests; :meth:`serve` returns once drained."""
        self.impl.stop()
