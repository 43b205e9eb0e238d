"""The watchers' sockets, held by one thread (no thread per watcher).

A watch request is answered by a request thread that checks it and
hands its socket over (``frontend/handoff.py``); from then on only this
thread touches the socket, non-blocking, through one ``selectors``
selector: it sends the response's head and the events the feed
(``feed.py``) publishes, each batch as one chunk of a chunked HTTP/1.1
body of JSON lines, and a heartbeat to a watcher sent nothing for
``heartbeat`` seconds.  A watcher whose unsent output passes
``buffer_limit`` bytes (it does not read) is dropped with a reset; its
bytes never grow without end and no other watcher waits for it.  A peer
that closed is noticed when its socket reads end-of-file, or when a
heartbeat fails.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from baremetal_allocclient.server.allocation.watch import events

LOG = logging.getLogger(__name__)
_RESET = struct.pack("ii", 1, 0)
_END = b"0\r\n\r\n"
#: The kernel's send buffer of a watcher's socket (bytes).
SEND_BUFFER = 65536


def chunk(data: bytes) -> bytes:
    """``data`` as one chunk of a chunked body."""
    return b"%X\r\n%s\r\n" % (len(data), data)


@dataclass(eq=False)
class Watcher:
    """One watcher: its socket, what it asked for, and the cursor of the
    last change it was sent (or skipped)."""

    sock: socket.socket
    filter: events.Filter
    cursor: int
    out: bytearray = field(default_factory=bytearray)
    last_sent: float = 0.0
    #: End the body once the output is sent (its catch-up was cut).
    end_when_sent: bool = False


class Full(Exception):
    """The watcher limit is reached."""


class Hub:
    """One thread over every watcher's socket."""

    def __init__(self, max_watchers: int, heartbeat: float,
                 buffer_limit: int) -> None:
        self.max_watchers = max_watchers
        self.heartbeat = heartbeat
        self.buffer_limit = buffer_limit
        self._lock = threading.Lock()
        self._reserved = 0
        #: What the hub's thread is asked to do, in order.
        self._commands: collections.deque[Callable[[], None]] = \
            collections.deque()
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._watchers: set[Watcher] = set()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="watch-hub",
                                        daemon=True)
        #: Counts for the tests and the metrics.
        self.dropped_slow = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """End every stream (a clean end of body) and the thread."""
        self._command(self._on_stop)
        self._thread.join(timeout=5)

    # -- any thread ----------------------------------------------------
    def reserve(self) -> None:
        """Count one more watcher, or raise :class:`Full`."""
        with self._lock:
            if self._reserved >= self.max_watchers:
                raise Full
            self._reserved += 1

    def release(self) -> None:
        """Give back a reservation that never became a watcher."""
        with self._lock:
            self._reserved -= 1

    def count(self) -> int:
        """Watchers held or about to be."""
        with self._lock:
            return self._reserved

    def add(self, watcher: Watcher, first: bytes, end: bool) -> None:
        """Take ``watcher`` (reserved) with ``first`` to send (its head,
        hello and catch-up); ``end``: end its body after it."""
        self._command(lambda: self._on_add(watcher, first, end))

    def publish(self, batch: Sequence[events.Event], upto: int) -> None:
        """The changes after the last batch, up to cursor ``upto``."""
        events_ = tuple(batch)
        self._command(lambda: self._on_batch(events_, upto))

    def _command(self, command: Callable[[], None]) -> None:
        self._commands.append(command)
        with contextlib.suppress(BlockingIOError):
            self._wake_w.send(b"\0")

    # -- the hub's thread ----------------------------------------------
    def _run(self) -> None:
        tick = min(self.heartbeat / 2, 1.0)
        while not self._stopped:
            try:
                self._round(tick)
            except Exception:  # the thread serves every watcher: go on
                LOG.exception("Watch hub round failed")
        self._selector.close()

    def _round(self, tick: float) -> None:
        for key, mask in self._selector.select(tick):
            if key.data is None:
                with contextlib.suppress(BlockingIOError):
                    self._wake_r.recv(4096)
                continue
            watcher: Watcher = key.data
            if mask & selectors.EVENT_READ:
                self._read(watcher)
            if mask & selectors.EVENT_WRITE and watcher in self._watchers:
                self._flush(watcher)
        while self._commands:
            command = self._commands.popleft()
            try:
                command()
            except Exception:
                LOG.exception("Watch hub command failed")
        self._beat(time.monotonic())

    def _on_stop(self) -> None:
        for watcher in list(self._watchers):
            # What the socket takes now, never a wait (a stop must not
            # hang on a watcher that does not read): a watcher that got
            # the end of body knows the stream ended cleanly.
            with contextlib.suppress(OSError):
                watcher.sock.send(bytes(watcher.out) + _END)
            self._close(watcher)
        self._stopped = True

    def _on_add(self, watcher: Watcher, first: bytes, end: bool) -> None:
        try:
            watcher.sock.setblocking(False)
        except OSError:  # closed before it was added
            self.release()
            return
        with contextlib.suppress(OSError):
            # A fixed send buffer (no autotuning to megabytes): what a
            # watcher leaves unread stays within about twice this plus
            # buffer_limit, and the idle ones cost little kernel memory.
            watcher.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF,
                                    SEND_BUFFER)
            watcher.sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE,
                                    1)
        try:
            self._selector.register(watcher.sock, selectors.EVENT_READ,
                                    watcher)
        except (OSError, ValueError):
            watcher.sock.close()
            self.release()
            return
        self._watchers.add(watcher)
        watcher.end_when_sent = end
        self._send(watcher, first)

    def _on_batch(self, batch: tuple[events.Event, ...], upto: int) -> None:
        for watcher in list(self._watchers):
            lines = [event.line for event in batch
                     if event.cursor > watcher.cursor
                     and watcher.filter.matches(event)]
            watcher.cursor = max(watcher.cursor, upto)
            if lines and not watcher.end_when_sent:
                self._send(watcher, chunk(b"".join(lines)))

    def _beat(self, now: float) -> None:
        for watcher in list(self._watchers):
            if now - watcher.last_sent >= self.heartbeat and \
                    not watcher.end_when_sent:
                self._send(watcher, chunk(events.heartbeat(watcher.cursor)))

    def _send(self, watcher: Watcher, data: bytes) -> None:
        # What was left unsent before this chunk is what the watcher did
        # not read: one chunk larger than the limit (a large extra) still
        # reaches a watcher that reads.
        watcher.out += data
        watcher.last_sent = time.monotonic()
        self._flush(watcher)
        if watcher in self._watchers and \
                len(watcher.out) - len(data) > self.buffer_limit:
            self.dropped_slow += 1
            LOG.info("Watcher dropped: %d bytes unread", len(watcher.out))
            self._close(watcher, reset=True)

    def _flush(self, watcher: Watcher) -> None:
        try:
            sent = watcher.sock.send(watcher.out)
        except BlockingIOError:
            sent = 0
        except OSError:
            self._close(watcher)
            return
        del watcher.out[:sent]
        if watcher.out:
            self._selector.modify(
                watcher.sock, selectors.EVENT_READ | selectors.EVENT_WRITE,
                watcher)
            return
        if watcher.end_when_sent:
            with contextlib.suppress(OSError):
                watcher.sock.send(_END)
            self._close(watcher)
            return
        self._selector.modify(watcher.sock, selectors.EVENT_READ, watcher)

    def _read(self, watcher: Watcher) -> None:
        try:
            data = watcher.sock.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the peer closed (what it sends is ignored)
            self._close(watcher)

    def _close(self, watcher: Watcher, reset: bool = False) -> None:
        if watcher not in self._watchers:
            return
        self._watchers.discard(watcher)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(watcher.sock)
        if reset:
            with contextlib.suppress(OSError):
                watcher.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                        _RESET)
        with contextlib.suppress(OSError):
            watcher.sock.close()
        self.release()
