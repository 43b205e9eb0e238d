"""Clients that never read their answer hold no thread, no slot for good
and little memory.

Issue 52: clients that sent ``GET /v1/nodes/detail`` (a page of 1,000
nodes with their details, 2.7 MB) and never read a byte kept their
connections open for good: waitress marks an idle connection to be
closed, but acts on the mark only once the socket takes output, which it
never did.  Those that sent ``GET /v1/nodes`` (0.4 MB, most of which the
kernel takes) were closed, but each held 0.3 MB of the server's memory
until then (waitress keeps an answer under 1 MiB in one buffer until all
of it is sent), and the close left the kernel holding the rest.

Here 60 clients never read ``/v1/nodes`` and 10 never read
``/v1/nodes/detail``: an ordinary request is answered at once (no
request thread is held; the server has 4); each connection is closed at
``--idle-timeout`` after its answer began, with a reset so that the
kernel drops the rest of the answer too; and the server's memory grows
by far less than the answers it holds (a request or an answer is kept in
memory up to 64 KiB per connection, the rest in a temporary file).
"""

from __future__ import annotations

import dataclasses
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Collection

import requests
import testtools

from baremetal_allocclient.tests.fixtures import launcher
from baremetal_allocclient.tests.fixtures.api import API_HEADER
from baremetal_allocclient.tests.fixtures.launcher import ServerProcess

RC = "unread"
NODES = 1000
UNREAD = 60  # clients that never read a page (0.4 MB)
LARGE = 10  # clients that never read a page with details (2.7 MB)
IDLE = 5.0  # serve --idle-timeout
THREADS = 4
#: Memory allowed per unread answer (it is 0.4 MB; 300 KiB of it each
#: stayed in memory before).
MOST_PER_CONNECTION = 128 * 1024
PROMPT = 2.0  # an ordinary request is answered within this (loaded box)
_OPEN = ("01", "08")  # ESTABLISHED, CLOSE_WAIT: the server holds it


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _server_side(port: int, clients: Collection[int] | None = None
                 ) -> dict[int, tuple[str, int]]:
    """(TCP state, bytes queued to send) of each connection on the
    server's side of ``port``, by the client's port (``/proc/net/tcp``;
    closed ones the kernel is still sending on included); with
    ``clients``, only those from these local ports of the test's own
    sockets (a socket of another test process may use the same port
    number on its side: full runs saw 22 such rows).  Keyed by the
    client's port: the table is not read atomically, and a connection
    moving in it meanwhile was once counted twice."""
    rows: dict[int, tuple[str, int]] = {}
    with open("/proc/net/tcp") as table:
        next(table)
        for line in table:
            fields = line.split()
            if int(fields[1].split(":")[1], 16) != port or \
                    fields[3] == "0A":  # the listening socket
                continue
            client = int(fields[2].split(":")[1], 16)
            if clients is None or client in clients:
                rows[client] = (fields[3], int(fields[4].split(":")[0], 16))
    return rows


def _held(port: int, clients: Collection[int] | None = None) -> int:
    """Connections the server has not closed on ``port`` (from
    ``clients``' ports, when given)."""
    return sum(state in _OPEN
               for state, _ in _server_side(port, clients).values())


def _answered(sock: socket.socket) -> bool:
    """Whether the server has begun to answer on ``sock``."""
    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except BlockingIOError:
        return False
    except OSError:  # reset: it had begun
        return True


@dataclasses.dataclass
class _Watched:
    #: connection -> (earliest, latest) moment its answer can have
    #: begun: between the sample before the one that saw it and that one
    #: (the test's own process may be slow to look on a loaded machine)
    answered: dict[int, tuple[float, float]]
    #: (before, after, connections still open), counted between the two
    held: list[tuple[float, float, int]]
    most: int  # the server's highest RSS
    latency: float | None  # of GET /v1 once all were answered
    clients: frozenset[int]  # the unread sockets' own ports


class UnreadAnswerTests(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.server = ServerProcess()
        self.addCleanup(self.server.cleanup)
        self.server.upgrade()
        launcher.enroll(self.server.db_url,
                        tempfile.mkdtemp(dir=self.server.tmpdir),
                        {f"{RC}-{i}": {"driver": "fake-hardware",
                                       "resource_class": RC}
                         for i in range(NODES)})
        self.server.start("--threads", str(THREADS),
                          "--idle-timeout", str(IDLE))
        assert self.server.proc is not None
        self.pid = self.server.proc.pid

    def _warm(self) -> int:
        """The server's memory once it has built as many lists at once
        as it can (its threads' heaps grown to their size)."""
        def read() -> None:
            with requests.Session() as session:
                for _ in range(8):
                    response = session.get(
                        self.server.endpoint + "/v1/nodes",
                        headers={API_HEADER: "latest"}, timeout=60)
                    self.assertEqual(NODES, len(response.json()["nodes"]))

        readers = [threading.Thread(target=read) for _ in range(THREADS * 2)]
        for thread in readers:
            thread.start()
        for thread in readers:
            thread.join(120)
        return _rss(self.pid)

    def _unread(self, path: str, count: int) -> list[socket.socket]:
        """``count`` clients that send ``GET path`` and read nothing (no
        other connection open)."""
        until = time.monotonic() + 10
        while _held(self.server.port):  # the warm-up's, say
            self.assertLess(time.monotonic(), until)
            time.sleep(0.05)
        socks = []
        for _ in range(count):
            sock = socket.socket()
            self.addCleanup(sock.close)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", self.server.port))
            sock.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n"
                         b"X-OpenStack-Ironic-API-Version: latest\r\n\r\n"
                         % path.encode())
            socks.append(sock)
        return socks

    def _watch(self, socks: list[socket.socket]) -> _Watched:
        """Until the server has closed every one of ``socks`` (or a
        minute and a half), when each got the beginning of its answer,
        how many stay open, the server's highest RSS, and how long an
        ordinary ``GET /v1`` takes once all are answered."""
        watched = _Watched({}, [], _rss(self.pid), None,
                           frozenset(sock.getsockname()[1] for sock in socks))
        until = time.monotonic() + 60 + IDLE + 10
        looked = time.monotonic()
        while time.monotonic() < until:
            watched.most = max(watched.most, _rss(self.pid))
            seen = [index for index, sock in enumerate(socks)
                    if index not in watched.answered and _answered(sock)]
            now = time.monotonic()
            watched.answered.update((index, (looked, now)) for index in seen)
            looked = now
            held = _held(self.server.port, watched.clients)
            watched.held.append((now, time.monotonic(), held))
            if len(watched.answered) < len(socks):
                pass
            elif watched.latency is None:
                began = time.monotonic()
                status = requests.get(self.server.endpoint + "/v1",
                                      timeout=30).status_code
                watched.latency = time.monotonic() - began
                self.assertEqual(200, status)
                looked = time.monotonic()
            elif held <= 0:
                break
            time.sleep(0.1)
        return watched

    def _check(self, watched: _Watched, count: int) -> None:
        """Every connection answered and closed with a reset at the idle
        timeout after its answer began, an ordinary request answered at
        once meanwhile."""
        self.assertEqual(count, len(watched.answered))
        self.assertIsNotNone(watched.latency)
        assert watched.latency is not None
        self.assertLess(watched.latency, PROMPT)
        self.assertLessEqual(watched.held[-1][2], 0,
                             "unread connections left open")
        # Nor does the kernel keep their answers (closed with a reset).
        self.assertEqual(0, sum(queued for _state, queued
                                in _server_side(self.server.port,
                                                watched.clients).values()))
        begun = watched.answered.values()
        for before, after, still_open in watched.held:
            closed = count - still_open
            # None closed before the idle timeout after its answer began
            # (at the earliest); each closed within it plus the
            # once-a-second check and a margin after (at the latest).
            self.assertLessEqual(closed, sum(
                earliest <= after - (IDLE - 1.5)
                for earliest, _latest in begun))
            self.assertGreaterEqual(closed, sum(
                latest <= before - (IDLE + 3)
                for _earliest, latest in begun))
        self.assertNotIn("Traceback", self.server.log())

    def _report(self, path: str, watched: _Watched, before: int) -> None:
        count = len(watched.answered)
        first = min(latest for _earliest, latest in watched.answered.values())
        last = max(latest for _earliest, latest in watched.answered.values())
        cut = [when for when, _after, still_open in watched.held
               if still_open < count]
        grown = (watched.most - before) / max(count, 1) / 1024
        print(f"\n{count} unread answers of {path} (begun over "
              f"{last - first:.1f} s): GET /v1 in {watched.latency} s; "
              f"memory {before >> 20} MiB -> {watched.most >> 20} MiB "
              f"(+{grown:.0f} KiB each); first closed "
              f"{(cut or [first])[0] - first:.1f} s after the first answer, "
              f"all {watched.held[-1][0] - last:.1f} s after the last; open "
              f"at the end: {watched.held[-1][2]}", file=sys.stderr)

    def test_unread_answers_are_dropped_at_the_idle_timeout(self) -> None:
        before = self._warm()
        watched = self._watch(self._unread("/v1/nodes", UNREAD))
        self._report("/v1/nodes", watched, before)
        self.assertLess(watched.most - before, UNREAD * MOST_PER_CONNECTION)
        self._check(watched, UNREAD)

    def test_unread_answers_over_a_mebibyte_are_dropped(self) -> None:
        """A page of 1,000 nodes with their details, 2.7 MB: more than
        the kernel takes, so waitress's close, asked for once the socket
        would take output, never came."""
        before = _rss(self.pid)
        watched = self._watch(self._unread("/v1/nodes/detail", LARGE))
        self._report("/v1/nodes/detail", watched, before)
        self._check(watched, LARGE)
