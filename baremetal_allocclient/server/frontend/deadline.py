"""The deadlines of a connection, checked by the I/O loop.

waitress's own ``channel_timeout`` closes a connection after that long
*without a byte*, so a client sending a blank line every few seconds
defeated it, and (issue 52) such blank lines also restarted the request
clock: waitress's parser completes an "empty request" on ``\\r\\n\\r\\n``.
And it only *asks* for the close, which the loop acts on once the socket
takes output; a client that does not read never let it (its connection
and the answer queued for it stayed open for good).

Here a connection is at every moment in one of four phases, each with
its own clock (:func:`verdict`, a pure function of :class:`State`):

receiving
    The request's line, headers and body must arrive whole within
    ``request_timeout`` of the connection's opening (its first request)
    or of the request's first byte that is not white space (the blank
    lines RFC 7230, section 3.5 lets a client send before a request
    start nothing).  Past it the server answers 408 and closes.
serving
    A request thread runs; the application bounds that.  Only a thread
    waiting for the client to take output over waitress's high
    watermark is bounded: no byte taken for ``idle_timeout`` closes the
    connection, and the thread's next write ends its request.
idle
    From the moment an answer is ready (its request thread finished),
    the client must take it and begin its next request within
    ``idle_timeout``; bytes that begin no request (blank lines, empty
    requests) do not reset that clock.  Past it the connection is closed.
closing
    A connection that was told to close (408 sent, ``Connection:
    close``) is closed at ``idle_timeout`` after its last answer, taken
    or not.

A close decided here is done at once, not asked for, and is a reset
when the client has not taken all it was sent (:meth:`DeadlineChannel.drop`):
a graceful close would leave the kernel holding the unsent answer (0.3
MB of a 0.4 MB list to a client that never read) until it gave up on
the client.
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import socket
import struct
import termios
import time
from dataclasses import dataclass
from typing import Any

from baremetal_allocclient.server.domain.recording import (
    NOT_RECORDED,
    Recorder,
)
from baremetal_allocclient.server.frontend import sending
from baremetal_allocclient.server.frontend import waitress_internals as w

_TIMEOUT_BODY = b"The request was not received in time.\r\n"
TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"Connection: close\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: %d\r\n\r\n%s" % (len(_TIMEOUT_BODY), _TIMEOUT_BODY)
)


_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() resets


def unsent(sock: socket.socket) -> int:
    """Bytes the kernel still holds for ``sock``'s peer (sent but not
    acknowledged, or not sent); 0 where the system does not say (the
    ``SIOCOUTQ`` ioctl, ``TIOCOUTQ`` by its terminal name)."""
    try:
        queued = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0" * 4)
    except (OSError, ValueError):
        return 0
    count: int = struct.unpack("i", queued)[0]
    return count


class Verdict(enum.Enum):
    KEEP = "keep"
    TIME_OUT = "time out"  # answer 408, then close
    CLOSE = "close"  # close now, answering nothing


@dataclass(frozen=True)
class State:
    """What the deadlines of one connection depend on (times from
    ``time.monotonic()``)."""

    opened: float
    #: A whole request has been delivered (its request thread started).
    delivered: bool
    #: A request thread runs, or a delivered request waits for one.
    serving: bool
    #: The first byte, not white space, of the request being received.
    began: float | None
    #: When the last answer was ready (its request thread finished).
    idle_since: float | None
    #: Told to close once its output is sent.
    closing: bool
    #: Seconds the client took no byte while a request thread waits
    #: for it to take some; 0 when none waits.
    stalled: float


def verdict(state: State, now: float, request_timeout: float,
            idle_timeout: float) -> Verdict:
    """What the I/O loop does with a connection in ``state`` at ``now``."""
    if state.serving:
        return Verdict.CLOSE if state.stalled > idle_timeout else Verdict.KEEP
    if state.closing:
        since = state.opened if state.idle_since is None else state.idle_since
        return Verdict.CLOSE if now - since > idle_timeout else Verdict.KEEP
    receiving = state.began if state.delivered else state.opened
    if receiving is not None:
        return (Verdict.TIME_OUT if now - receiving > request_timeout
                else Verdict.KEEP)
    if state.idle_since is not None and now - state.idle_since > idle_timeout:
        return Verdict.CLOSE
    return Verdict.KEEP


class TimedParser(w.Parser):
    """waitress's request parser, knowing when its request began: its
    first byte that is not white space (which the parser skips before a
    request line)."""

    began: float | None = None

    def received(self, data: bytes) -> int:
        if self.began is None and data.strip():
            self.began = time.monotonic()
        consumed: int = super().received(data)
        return consumed

    def parse_header(self, header_plus: bytes) -> None:
        """waitress's, with a ``Content-Length`` of any size read as too
        large (413, as waitress answers one over the body limit): its
        ``int()`` raised ``ValueError`` past 4,300 digits (CPython's
        limit), which closed the connection without an answer."""
        try:
            super().parse_header(header_plus)
        except ValueError:
            length = w.header(self, "CONTENT_LENGTH")
            if not (length.isascii() and length.isdigit()):
                raise w.ParsingError("Bad request") from None
            w.over_the_body_limit(self)


class DeadlineChannel(w.Channel):
    """An HTTP connection that knows which phase it is in (and asks the
    I/O loop to send only what a request thread is not sending, see
    :mod:`.sending`)."""

    writable = sending.writable
    parser_class = TimedParser

    # Set before waitress adds the connection to the loop's map.
    opened = 0.0
    idle_since: float | None = None
    delivered = False
    in_service = 0  # request threads in service() (under requests_lock)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.opened = time.monotonic()
        super().__init__(*args, **kwargs)

    def service(self) -> None:
        """Serve the next request (a request thread)."""
        with w.requests_lock(self):
            self.delivered = True
            self.in_service += 1
            # waitress answers a request its parser refused (malformed,
            # over a size limit: 400, 413, 431) and closes the connection.
            refused = w.refused_requests(self)
        if refused:
            recorder: Recorder = getattr(self.server, "recorder",
                                         NOT_RECORDED)
            recorder.connection_closed("refused")
        try:
            super().service()
        finally:
            with w.requests_lock(self):
                # Before in_service drops, so that the I/O thread reading
                # in_service 0 reads this idle time, not the last one.
                self.idle_since = time.monotonic()
                self.in_service -= 1

    def state(self) -> State:
        """This connection's :class:`State` (the I/O thread)."""
        with w.requests_lock(self):
            serving = w.request_running(self) or self.in_service > 0
            stalled = 0.0
            if serving and w.output_over_watermark(self):
                # No byte is read while output is queued: the last byte
                # sent, or the request's start.
                stalled = time.time() - w.last_sent(self)
            return State(
                opened=self.opened, delivered=self.delivered,
                serving=serving, began=w.request_began(self),
                idle_since=self.idle_since, closing=w.closing(self),
                stalled=stalled)

    def drop(self) -> None:
        """Close now, with a reset if the client has not taken all it
        was sent (I/O thread only)."""
        sock = w.socket_of(self)
        if sock is not None and (w.output_pending(self) or unsent(sock)):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
        w.close_now(self)

    def time_out(self) -> None:
        """Answer 408 and close once that is sent (I/O thread only)."""
        w.discard_request(self)
        self.idle_since = time.monotonic()
        w.queue_output(self, TIMEOUT_RESPONSE)
        w.close_when_sent(self)


class DeadlineServer(w.Server):
    """A TCP server that enforces each connection's deadlines (instead
    of waitress's ``channel_timeout``)."""

    channel_class = DeadlineChannel
    request_timeout = 30.0
    idle_timeout = 60.0
    #: Counts the connections closed before a whole request (set by the
    #: front end).
    recorder: Recorder = NOT_RECORDED

    def maintenance(self, now: Any) -> None:
        """Nothing: waitress calls this while it builds the set of
        descriptors to poll, and a connection closed then could hand its
        descriptor number to one accepted in the same round, which would
        get the closed one's ``POLLNVAL`` and be closed too.
        :meth:`check_deadlines` runs between two rounds."""

    def check_deadlines(self, now: float) -> None:
        """Answer 408 or close each connection past a deadline at ``now``
        (``time.monotonic()``; the I/O thread, between two rounds)."""
        for channel in w.channels(self):
            state = channel.state()
            action = verdict(state, now, self.request_timeout,
                             self.idle_timeout)
            if action is Verdict.TIME_OUT:
                channel.time_out()
                self.recorder.connection_closed("request_timeout")
            elif action is Verdict.CLOSE:
                channel.drop()
                self.recorder.connection_closed(
                    "unread_answer" if state.serving else "idle_timeout")
