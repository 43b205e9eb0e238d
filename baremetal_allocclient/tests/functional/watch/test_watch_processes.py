"""The change stream against real ``serve`` processes on loopback, on
SQLite, PostgreSQL and MariaDB (issue 46):

- a change committed through process B reaches a watcher on process A;
- process A killed and restarted in the middle of a burst of 500
  changes: the watcher resumes from its cursor, and replaying what it
  got reproduces every allocation's final state, with every cursor seen
  once (none lost, none repeated);
- a member's watch never carries another project's allocation;
- a watcher that never reads is dropped, and the others still get every
  change at once.
"""

from __future__ import annotations

import json
import queue
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

import requests
import testtools

from baremetal_allocclient.tests.fixtures import (
    credentials,
    databases,
    launcher,
)
from baremetal_allocclient.tests.functional.watch._stream import (
    HEADERS,
    PATH,
    Stream,
)

_V = {"X-OpenStack-Ironic-API-Version": "1.60"}
CURSOR_HEADER = "X-Baremetal-Alloc-Watch-Cursor"


def _rc() -> str:
    return "rc-" + uuid.uuid4().hex[:10]


class _ProcessTests(databases.ScratchPerClass):
    """Two ``serve`` processes (A and B) on one scratch database of
    ``kind``, HTTP Basic with alice (proj-a) and bob (proj-b)."""

    kind: ClassVar[str]
    a: ClassVar[launcher.ServerProcess]
    b: ClassVar[launcher.ServerProcess]
    creds: ClassVar[credentials.Credentials]
    OPTIONS = ("--watch-heartbeat", "1", "--watch-buffer-limit", "65536")

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        case: Any = cls
        cls.a = launcher.ServerProcess(cls.scratch.url)
        case.addClassCleanup(cls.a.cleanup)
        cls.creds = credentials.write_credentials(cls.a.tmpdir)
        admin = cls.creds.auth(credentials.ADMIN)
        cls.a.start(*cls.OPTIONS, *cls.creds.serve_options(),
                    "--conductor-name", "a", schema=True, admin_auth=admin)
        cls.b = launcher.ServerProcess(cls.scratch.url)
        case.addClassCleanup(cls.b.cleanup)
        cls.b.start(*cls.OPTIONS, *cls.creds.serve_options(),
                    "--conductor-name", "b", admin_auth=admin)

    def _admin(self) -> tuple[str, str]:
        return self.creds.auth(credentials.ADMIN)

    def _create(self, server: launcher.ServerProcess, **body: Any) -> Any:
        body.setdefault("resource_class", _rc())
        return server.expect(201, "POST", "/v1/allocations", body,
                             headers=_V)

    def _watch(self, server: launcher.ServerProcess,
               auth: tuple[str, str] | None = None, **query: Any) -> Stream:
        stream = Stream(server.endpoint, auth or self._admin(), **query)
        case: Any = self
        case.addCleanup(stream.close)
        case.assertEqual(200, stream.status)
        hello = stream.next()
        case.assertEqual("hello", hello and hello["type"])
        return stream

    def test_a_change_through_b_reaches_a_watcher_on_a(self) -> None:
        case: Any = self
        name = "x-" + uuid.uuid4().hex[:8]
        stream = self._watch(self.a, name=name)
        began = time.monotonic()
        created = self._create(self.b, name=name)
        changes = stream.changes_until(
            lambda found: any(c["allocation"]["state"] == "error"
                              for c in found))
        case.assertLess(time.monotonic() - began, 10)
        case.assertEqual(["created", "updated"],
                         [c["op"] for c in changes])
        case.assertEqual({created["uuid"]},
                         {c["allocation"]["uuid"] for c in changes})
        self.b.expect(204, "DELETE", f"/v1/allocations/{created['uuid']}",
                      headers=_V)
        gone = stream.changes_until(lambda found: bool(found))
        case.assertEqual("deleted", gone[0]["op"])

    def test_a_member_sees_its_projects_allocations_only(self) -> None:
        case: Any = self
        rc = _rc()
        alice = self.creds.auth(credentials.ALICE)
        mine = self._watch(self.a, alice, resource_class=rc)
        theirs = self._create(self.b, resource_class=rc,
                              owner=credentials.PROJECT_B)
        own = self._create(self.b, resource_class=rc,
                           owner=credentials.PROJECT_A)
        seen = mine.changes_until(lambda found: sum(
            c["allocation"]["state"] == "error" for c in found) >= 1)
        # Every change of both has a cursor by now; the member's stream
        # went past the other's without showing it.
        time.sleep(1.5)
        while not mine.lines.empty():
            line = mine.next()
            if line is not None and line["type"] == "change":
                seen.append(line)
        case.assertEqual({own["uuid"]},
                         {c["allocation"]["uuid"] for c in seen})
        case.assertNotIn(theirs["uuid"], json.dumps(seen))
        refused = Stream(self.a.endpoint, alice,
                         owner=credentials.PROJECT_B)
        case.assertEqual(403, refused.status)

    def test_resume_after_a_kill_in_a_burst_loses_and_repeats_nothing(
            self) -> None:
        case: Any = self
        rc = _rc()
        uuids = [self._create(self.b, resource_class=rc)["uuid"]
                 for _ in range(25)]
        for ident in uuids:
            self.b.wait_allocation(ident)
        listed = self.a.request("GET", f"/v1/allocations?resource_class={rc}",
                                headers=HEADERS)
        case.assertEqual(200, listed.status_code)
        start = int(listed.headers[CURSOR_HEADER])
        state = {a["uuid"]: (a["state"], a["extra"])
                 for a in listed.json()["allocations"]}
        watcher = _Resuming(self.a.endpoint, self._admin(), start, rc)
        watcher.start()
        self.addCleanup(watcher.stop)  # type: ignore[attr-defined]
        for i in range(500):
            if i == 200:
                self.a.proc.kill()  # type: ignore[union-attr]
                self.a.proc.wait()  # type: ignore[union-attr]
                # (A new name: the killed one's heartbeat must expire
                # before its name can be taken again.)
                self.a.start(*self.OPTIONS, *self.creds.serve_options(),
                             "--conductor-name", "a-" + uuid.uuid4().hex[:6],
                             port=self.a.port, admin_auth=self._admin())
            self.b.expect(200, "PATCH", f"/v1/allocations/{uuids[i % 25]}",
                          [{"op": "add", "path": "/extra/n",
                            "value": str(i)}], headers=_V)
        final = self.b.request("GET", f"/v1/allocations?resource_class={rc}",
                               headers=HEADERS)
        # (The list's cursor may precede its last changes: committed, not
        # yet sequenced; so wait for the last patch itself.)
        watcher.wait_until(lambda: any(
            c["allocation"]["extra"].get("n") == "499"
            for c in watcher.changes))
        case.assertGreaterEqual(watcher.reconnects, 1)
        cursors = [c["cursor"] for c in watcher.changes]
        case.assertEqual(sorted(set(cursors)), cursors)  # none repeated
        # Each of the 500 patches once (the creates' own changes may come
        # too: committed before the list, sequenced after its cursor).
        patched = [(c["allocation"]["uuid"], c["allocation"]["extra"]["n"])
                   for c in watcher.changes if "n" in c["allocation"]["extra"]]
        case.assertEqual(500, len(set(patched)))
        case.assertEqual(500, len(patched))
        for change in watcher.changes:
            body = change["allocation"]
            state[body["uuid"]] = (body["state"], body["extra"])
        case.assertEqual(
            {a["uuid"]: (a["state"], a["extra"])
             for a in final.json()["allocations"]}, state)

    def test_a_watcher_that_does_not_read_is_dropped(self) -> None:
        case: Any = self
        rc = _rc()
        created = self._create(self.b, resource_class=rc)
        self.b.wait_allocation(created["uuid"])
        reader = self._watch(self.a, resource_class=rc)
        stalled = socket.socket()
        self.addCleanup(stalled.close)  # type: ignore[attr-defined]
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.connect(("127.0.0.1", self.a.port))
        token = requests.auth._basic_auth_str(*self._admin())
        stalled.sendall(
            (f"GET {PATH}?resource_class={rc} HTTP/1.1\r\nHost: x\r\n"
             f"Authorization: {token}\r\n"
             + "".join(f"{k}: {v}\r\n" for k, v in HEADERS.items())
             + "\r\n").encode())
        big = "x" * 4000
        latencies = []
        for i in range(200):
            self.b.expect(200, "PATCH", f"/v1/allocations/{created['uuid']}",
                          [{"op": "add", "path": "/extra/big",
                            "value": f"{i}{big}"}], headers=_V)
            began = time.monotonic()
            self.a.expect(200, "GET", f"/v1/allocations/{created['uuid']}",
                          headers=_V)
            latencies.append(time.monotonic() - began)
        last = f"199{big}"
        changes = reader.changes_until(
            lambda found: bool(found) and
            found[-1]["allocation"]["extra"].get("big") == last)
        # (The create's own changes may come first: a watch "from now"
        # starts after the last cursor handed out.)
        case.assertEqual(200, len([c for c in changes
                                   if "big" in c["allocation"]["extra"]]))
        case.assertTrue(_was_reset(stalled))
        case.assertIn("Watcher dropped", self.a.log())
        latencies.sort()
        case.assertLess(latencies[len(latencies) // 2], 0.5)


def _was_reset(sock: socket.socket) -> bool:
    """Whether the server reset (or closed) the connection: read what
    it sent until the end."""
    sock.settimeout(10)
    deadline = time.monotonic() + 20
    try:
        while sock.recv(65536):
            if time.monotonic() > deadline:
                return False  # still sent heartbeats: not dropped
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


class _Resuming(threading.Thread):
    """A watcher that reconnects with its last cursor whenever its
    stream ends or fails (the server was killed)."""

    def __init__(self, endpoint: str, auth: tuple[str, str], cursor: int,
                 rc: str) -> None:
        super().__init__(daemon=True)
        self.endpoint, self.auth, self.rc = endpoint, auth, rc
        self.cursor = cursor
        self.changes: list[dict[str, Any]] = []
        self.reconnects = -1
        self._stopped = threading.Event()
        self._progress: queue.Queue[int] = queue.Queue()

    def run(self) -> None:
        while not self._stopped.is_set():
            try:
                stream = Stream(self.endpoint, self.auth, since=self.cursor,
                                resource_class=self.rc)
            except requests.RequestException:
                time.sleep(0.1)
                continue
            if stream.status != 200:
                time.sleep(0.1)
                continue
            self.reconnects += 1
            self._follow(stream)

    def _follow(self, stream: Stream) -> None:
        while not self._stopped.is_set():
            try:
                line = stream.next(timeout=5)
            except queue.Empty:
                break
            if line is None:
                break
            if line["type"] == "change":
                self.changes.append(line)
            self.cursor = line["cursor"]
            self._progress.put(self.cursor)
        stream.close()

    def wait_until(self, done: Callable[[], bool],
                   timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            try:
                self._progress.get(timeout=max(0.0, deadline
                                               - time.monotonic()))
            except queue.Empty:
                raise AssertionError(
                    f"watcher at {self.cursor}, not done") from None

    def stop(self) -> None:
        self._stopped.set()


class SQLiteProcessTests(_ProcessTests, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLProcessTests(_ProcessTests, testtools.TestCase):
    kind = "postgresql"


class MySQLProcessTests(_ProcessTests, testtools.TestCase):
    kind = "mysql"
