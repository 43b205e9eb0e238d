"""A loopback TCP proxy between a client under test and a real server.

It can make the server look slow (each answer held ``delay`` seconds),
lose the answer to the first ``POST`` (the request reaches the server,
then the client's connection is reset instead of getting the answer), and
records when the first request arrived, so a test can measure a time
budget "from the first request" without counting interpreter start-up.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time

_CHUNK = 65536


class WireProxy:
    """Forwards 127.0.0.1:<port> to 127.0.0.1:``upstream_port``."""

    def __init__(
        self, upstream_port: int, *, delay: float = 0.0,
        reset_first_post: bool = False,
    ) -> None:
        self.upstream_port = upstream_port
        self.delay = delay
        self.reset_first_post = reset_first_post
        self.first_request_at: float | None = None
        self.resets = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.port = int(self._listener.getsockname()[1])
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._stopped.set()
        self._thread.join()
        self._listener.close()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(
                target=self._serve, args=(client,), daemon=True
            ).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(
                ("127.0.0.1", self.upstream_port), timeout=5
            )
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        client.settimeout(None)
        link = _Link(client, upstream)
        threading.Thread(
            target=self._answers, args=(link,), daemon=True
        ).start()
        self._requests(link)

    def _requests(self, link: _Link) -> None:
        try:
            while data := link.client.recv(_CHUNK):
                with self._lock:
                    if self.first_request_at is None:
                        self.first_request_at = time.monotonic()
                    if self.reset_first_post and data.startswith(b"POST"):
                        self.reset_first_post = False
                        link.drop_answer = True
                link.upstream.sendall(data)
        except OSError:
            pass
        finally:
            _close(link.upstream)

    def _answers(self, link: _Link) -> None:
        try:
            while data := link.upstream.recv(_CHUNK):
                if link.drop_answer:
                    # The server answered; the client gets a reset instead.
                    link.client.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER,
                        struct.pack("ii", 1, 0),
                    )
                    # Wake the thread reading from the client first: a
                    # socket is only really closed (RST sent) once no
                    # thread is blocked on it.
                    link.client.shutdown(socket.SHUT_RD)
                    link.client.close()
                    with self._lock:
                        self.resets += 1
                    return
                if self.delay:
                    time.sleep(self.delay)
                link.client.sendall(data)
        except OSError:
            pass
        _close(link.client)


class _Link:
    """One client connection and its upstream connection."""

    def __init__(self, client: socket.socket, upstream: socket.socket):
        self.client = client
        self.upstream = upstream
        self.drop_answer = False


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
