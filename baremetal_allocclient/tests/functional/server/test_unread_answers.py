"""Clients that never read their answer hold no thread, no slot for good
and little memory.

Issue 52: clients that sent ``GET /v1/nodes`` (a page of 1,000 nodes,
0.4 MB) and never read a byte kept their connections open for good:
waitress marks an idle connection to be closed, but acts on the mark
only once the socket takes output, which it never does; and each held
its unsent answer in memory (200 of them: 0.3 MB each).  Here 60 such
clients: an ordinary request is answered at once (no request thread is
held; the server has 4), each connection is closed at ``--idle-timeout``
after its answer was ready, with a reset so that the kernel drops the
rest of the answer too, and the server's memory grows by far less than
the answers it holds (a request or an answer is kept in memory up to
64 KiB per connection, the rest in a temporary file).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import tempfile
import threading
import time

import requests
import testtools

from baremetal_allocclient.tests.fixtures import launcher
from baremetal_allocclient.tests.fixtures.api import API_HEADER
from baremetal_allocclient.tests.fixtures.launcher import ServerProcess

RC = "unread"
NODES = 1000
UNREAD = 60  # clients that never read
IDLE = 5.0  # serve --idle-timeout
THREADS = 4
#: Memory allowed per unread answer (it is 0.4 MB; 300 KiB of it each
#: stayed in memory before).
MOST_PER_CONNECTION = 128 * 1024
PROMPT = 2.0  # an ordinary request is answered within this (loaded box)


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _sockets(pid: int) -> int:
    """How many sockets the server has open (listening ones included)."""
    fds = f"/proc/{pid}/fd"
    count = 0
    for fd in os.listdir(fds):
        with contextlib.suppress(OSError):  # closed meanwhile
            count += os.readlink(os.path.join(fds, fd)).startswith("socket:")
    return count


def _kernel_queued(port: int) -> int:
    """Bytes the kernel holds to send from the server's ``port`` to
    its clients (``/proc/net/tcp``: its connections, closed ones still
    sending included)."""
    queued = 0
    with open("/proc/net/tcp") as table:
        next(table)
        for line in table:
            fields = line.split()
            if int(fields[1].split(":")[1], 16) == port:
                queued += int(fields[4].split(":")[0], 16)
    return queued


def _answered(sock: socket.socket) -> bool:
    """Whether the server has begun to answer on ``sock``."""
    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except BlockingIOError:
        return False
    except OSError:  # reset: it had begun
        return True


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

    def _unread(self) -> list[socket.socket]:
        socks = []
        for _ in range(UNREAD):
            sock = socket.socket()
            self.addCleanup(sock.close)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", self.server.port))
            sock.sendall(b"GET /v1/nodes HTTP/1.1\r\nHost: x\r\n"
                         b"X-OpenStack-Ironic-API-Version: latest\r\n\r\n")
            socks.append(sock)
        return socks

    def test_unread_answers_are_dropped_at_the_idle_timeout(self) -> None:
        before = self._warm()
        time.sleep(1)  # the warm-up's connections closed
        quiet = _sockets(self.pid)
        socks = self._unread()
        until = time.monotonic() + 10
        while _sockets(self.pid) - quiet < UNREAD:  # all accepted
            self.assertLess(time.monotonic(), until)
            time.sleep(0.05)
        answered: dict[int, float] = {}  # connection -> its answer begun
        held: list[tuple[float, int]] = []  # (when, connections open)
        most, latency = before, None
        until = time.monotonic() + 60 + IDLE + 10
        while time.monotonic() < until:
            most = max(most, _rss(self.pid))
            now = time.monotonic()
            answered.update((index, now) for index, sock in enumerate(socks)
                            if index not in answered and _answered(sock))
            held.append((now, _sockets(self.pid) - quiet))
            if len(answered) < UNREAD:
                pass
            elif latency is None:
                began = time.monotonic()
                status = requests.get(self.server.endpoint + "/v1",
                                      timeout=30).status_code
                latency = time.monotonic() - began
                self.assertEqual(200, status)
            elif held[-1][1] <= 0:
                break
            time.sleep(0.1)
        grown = most - before
        first, last = min(answered.values()), max(answered.values())
        cut = [when for when, still_open in held if still_open < UNREAD]
        print(f"\n{UNREAD} unread answers of /v1/nodes (begun over "
              f"{last - first:.1f} s): GET /v1 in {latency} s; memory "
              f"{before >> 20} MiB -> {most >> 20} MiB (+"
              f"{grown / UNREAD / 1024:.0f} KiB each); first closed "
              f"{(cut or [first])[0] - first:.1f} s after the first answer, "
              f"all {held[-1][0] - last:.1f} s after the last; open at the "
              f"end: {held[-1][1]}", file=sys.stderr)
        self.assertEqual(UNREAD, len(answered))
        self.assertIsNotNone(latency)
        assert latency is not None
        self.assertLess(latency, PROMPT)
        self.assertLess(grown, UNREAD * MOST_PER_CONNECTION)
        self.assertLessEqual(held[-1][1], 0, "unread connections left open")
        # Nor does the kernel keep their answers (closed with a reset).
        self.assertEqual(0, _kernel_queued(self.server.port))
        for when, still_open in held:
            closed = UNREAD - still_open
            # Closed at the idle timeout after its answer began (the
            # deadline checked each second; one more socket for GET /v1).
            self.assertLessEqual(closed, sum(
                at <= when - (IDLE - 1.5) for at in answered.values()))
            self.assertGreaterEqual(closed + 1, sum(
                at <= when - (IDLE + 3) for at in answered.values()))
        self.assertNotIn("Traceback", self.server.log())
