"""A tiny loopback TCP proxy the tests cut to make a database vanish.

The server connects to the database through it; :meth:`TcpProxy.stop`
refuses new connections and drops the open ones (what a database restart
or a network cut looks like to the server), :meth:`TcpProxy.start`
brings it back on the same port.  :meth:`TcpProxy.cut_for` does both,
the start after N seconds in the background; :meth:`TcpProxy.pause`
holds every byte in both directions without closing anything (a stalled
network or a frozen database), :meth:`TcpProxy.resume` lets them flow
again.  The shared database server itself is never touched.
"""

from __future__ import annotations

import contextlib
import socket
import threading

from sqlalchemy.engine import make_url

from baremetal_allocclient.tests.fixtures.processes import free_port

_CHUNK = 65536
#: Where a database URL without a port points.
DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306}


class TcpProxy:
    """Forwards 127.0.0.1:<port> to ``target``."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._flowing = threading.Event()
        self._flowing.set()
        self._restart: threading.Timer | None = None

    def start(self) -> None:
        """Listen (again) and forward new connections."""
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        listener.settimeout(0.1)
        self._listener = listener
        self._stop.clear()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Refuse new connections and cut every open one."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        with self._lock:
            sockets, self._open = self._open, set()
        for sock in sockets:
            _close(sock)
        self._flowing.set()  # held pumps see their sockets closed

    def cut_for(self, seconds: float) -> None:
        """Cut now (as :meth:`stop`) and listen again after ``seconds``
        (in a timer thread; :meth:`wait_restored` waits for it)."""
        self.stop()
        self._restart = threading.Timer(seconds, self.start)
        self._restart.daemon = True
        self._restart.start()

    def wait_restored(self, timeout: float = 60) -> None:
        """Wait until a :meth:`cut_for` restarted the proxy."""
        restart, self._restart = self._restart, None
        if restart is not None:
            restart.join(timeout)

    def pause(self) -> None:
        """Hold all traffic (connections stay open) until :meth:`resume`."""
        self._flowing.clear()

    def resume(self) -> None:
        """Let held traffic flow again."""
        self._flowing.set()

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                client, _addr = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._open.update((client, upstream))
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(
                    target=self._pump, args=(src, dst), daemon=True
                ).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(_CHUNK)
                if not data:
                    break
                self._flowing.wait()
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                _close(sock)
            with self._lock:
                self._open.discard(src)
                self._open.discard(dst)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def in_front_of(db_url: str) -> tuple[TcpProxy, str]:
    """A started proxy to the database of ``db_url`` (PostgreSQL or
    MariaDB) and the same URL through it; the caller stops the proxy."""
    direct = make_url(db_url)
    backend = direct.get_backend_name()
    proxy = TcpProxy((direct.host or "127.0.0.1",
                      direct.port or DEFAULT_PORTS[backend]))
    proxy.start()
    proxied = direct.set(host="127.0.0.1", port=proxy.port)
    return proxy, proxied.render_as_string(hide_password=False)
