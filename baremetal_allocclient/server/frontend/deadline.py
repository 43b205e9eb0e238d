"""A deadline for receiving each request, checked by the I/O loop.

waitress's own ``channel_timeout`` closes a connection only after that
long *without a byte*; a client that sends a byte every few seconds
defeats it.  :class:`DeadlineChannel` remembers when the request being
received began (the connection's opening for its first request, the
first byte for the later ones on a kept-alive connection), and
:class:`DeadlineServer`'s periodic maintenance answers 408 and closes
every connection whose request is older than the deadline.  A request
being served, and the idle time between two requests, are not counted
(the latter is bounded by ``channel_timeout``).
"""

from __future__ import annotations

import time
from typing import Any

from waitress.channel import HTTPChannel
from waitress.server import TcpWSGIServer

from baremetal_allocclient.server.frontend import sending

_TIMEOUT_BODY = b"The request was not received in time.\r\n"
TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"Connection: close\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: %d\r\n\r\n%s" % (len(_TIMEOUT_BODY), _TIMEOUT_BODY)
)


class DeadlineChannel(HTTPChannel):
    """An HTTP connection that knows since when its request is arriving
    (and asks the I/O loop to send only what a request thread is not
    sending, see :mod:`.sending`)."""

    writable = sending.writable

    #: ``time.monotonic()`` when the request being received began, or None
    #: while none is (served, or idle between two requests).
    receiving_since: float | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.receiving_since = time.monotonic()

    def received(self, data: bytes) -> bool:
        before = self.request
        if before is None and self.receiving_since is None and data:
            self.receiving_since = time.monotonic()
        result = super().received(data)
        if self.request is None:
            self.receiving_since = None
        elif self.request is not before and before is not None:
            self.receiving_since = time.monotonic()  # a pipelined one
        return result

    def time_out(self) -> None:
        """Answer 408 and close once that is sent (I/O thread only)."""
        self.request = None
        self.receiving_since = None
        with self.outbuf_lock:
            self.outbufs[-1].append(TIMEOUT_RESPONSE)
            self.total_outbufs_len += len(TIMEOUT_RESPONSE)
            self.current_outbuf_count += len(TIMEOUT_RESPONSE)
        self.close_when_flushed = True


class DeadlineServer(TcpWSGIServer):
    """A TCP server whose maintenance enforces ``request_timeout``."""

    channel_class = DeadlineChannel
    request_timeout = 30.0

    def maintenance(self, now: Any) -> None:
        super().maintenance(now)
        cutoff = time.monotonic() - self.request_timeout
        channels: dict[int, Any] = self.active_channels  # type: ignore[assignment]
        for channel in list(channels.values()):
            since = getattr(channel, "receiving_since", None)
            if (since is not None and since < cutoff
                    and not channel.requests and not channel.will_close
                    and not channel.close_when_flushed):
                channel.time_out()
