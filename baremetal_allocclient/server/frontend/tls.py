"""TLS inside waitress's I/O loop (waitress has no TLS of its own).

Each accepted socket is wrapped server-side without a handshake; the
handshake then advances, like every read and write, only when the loop
finds the socket ready, so a client that stalls in the handshake holds
a file descriptor, not a thread, and the request deadline
(:mod:`.deadline`) counts from the connection's opening, handshake
included; past it the connection is closed at once (there is no TLS
to answer 408 in).  Reads drain what OpenSSL has already decrypted (the socket
is not readable again for bytes already taken from the kernel).

SSL objects are not safe for concurrent use: a request thread may send
(waitress flushes large responses from it) while the loop thread reads
or sends, so every call into the SSL object holds the channel's
``tls_lock``.
"""

from __future__ import annotations

import errno
import ssl
import threading
from typing import Any

from baremetal_allocclient.server.frontend import waitress_internals as w
from baremetal_allocclient.server.frontend.deadline import DeadlineChannel

_WANT = (ssl.SSLWantReadError, ssl.SSLWantWriteError)
#: The errors waitress takes for a client gone (``wasyncore._DISCONNECTED``).
_DISCONNECTED = frozenset({errno.ECONNRESET, errno.ENOTCONN, errno.ESHUTDOWN,
                           errno.ECONNABORTED, errno.EPIPE, errno.EBADF})


class TLSChannel(DeadlineChannel):
    """An HTTPS connection; ``server.tls_context`` holds the context."""

    def __init__(self, server: Any, sock: Any, addr: Any, adj: Any,
                 map: Any = None) -> None:
        context: ssl.SSLContext = server.tls_context
        wrapped = context.wrap_socket(sock, server_side=True,
                                      do_handshake_on_connect=False)
        self.tls_socket = wrapped  # self.socket, typed (None once closed)
        self.tls_lock = threading.Lock()
        self.handshaken = False
        self.handshake_wants_write = False
        super().__init__(server, wrapped, addr, adj, map)

    def readable(self) -> bool:
        if not self.handshaken:
            return not self.handshake_wants_write
        return bool(super().readable())

    def writable(self) -> bool:
        if not self.handshaken:  # closing: told to close in the handshake
            return self.handshake_wants_write or w.closing(self)
        return bool(super().writable())

    def time_out(self) -> None:
        if self.handshaken:
            super().time_out()
        else:  # no TLS to answer 408 in
            self.drop()

    def _handshake(self) -> None:
        try:
            with self.tls_lock:
                self.tls_socket.do_handshake()
        except ssl.SSLWantReadError:
            self.handshake_wants_write = False
            return
        except ssl.SSLWantWriteError:
            self.handshake_wants_write = True
            return
        except OSError:  # bad client hello, plain HTTP, reset: just close
            w.close_now(self)
            return
        self.handshaken = True
        self.handshake_wants_write = False

    def handle_read(self) -> None:
        if not self.handshaken:
            self._handshake()
            return
        while w.socket_of(self) is not None:
            try:
                with self.tls_lock:
                    data = self.tls_socket.recv(w.receive_size(self))
            except _WANT:
                return
            except OSError:
                w.close_now(self)
                return
            if not data:  # the client closed
                w.close_now(self)
                return
            w.deliver(self, data)
            with self.tls_lock:
                if (w.socket_of(self) is None
                        or not self.tls_socket.pending()):
                    return

    def handle_write(self) -> None:
        if not self.handshaken:
            if w.closing(self):
                w.close_now(self)
            else:
                self._handshake()
            return
        super().handle_write()

    def send(self, data: bytes, do_close: bool = True) -> int:
        # handle_close takes the outbuf lock: never under tls_lock.
        try:
            with self.tls_lock:
                if w.socket_of(self) is None:
                    return 0
                return self.tls_socket.send(data)
        except _WANT:
            return 0
        except OSError as why:
            if why.args[0] not in _DISCONNECTED:
                raise  # waitress closes the connection
            if do_close:
                w.close_now(self)
            return 0
