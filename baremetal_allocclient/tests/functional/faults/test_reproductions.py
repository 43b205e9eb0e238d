"""The nine reproductions of issue 13, as end-to-end scenarios.

Each drives real ``serve`` processes on SQLite, PostgreSQL and MariaDB
(the latter two skip when their URL variable is unset), injects the
overlap or fault of one reported defect, and checks the invariants of
:mod:`._invariants` afterwards.  Item 4 (Placement) is in
``test_placement_faults``; the others are here, grouped into classes that
stestr can run in parallel.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import uuid as uuidlib
from typing import Any

import requests

from baremetal_allocclient.tests.fixtures.launcher import ServerProcess
from baremetal_allocclient.tests.fixtures.processes import answers
from baremetal_allocclient.tests.functional.faults import _harness
from baremetal_allocclient.tests.functional.multiprocess import _cluster

FAST = _cluster.FAST
HEARTBEAT_TIMEOUT = 3.0


class _IdReuse:
    """Item 1 (allocation-id reuse) and item 9 (UUID case, names)."""

    scenario: _harness.Scenario
    start_server: Any
    enroll: Any
    rc: Any
    assert_no_violations: Any

    def test_deleted_allocation_worker_cannot_write_into_a_new_one(
        self,
    ) -> None:
        """Issue 13 item 1: create p (class a), delete p, create q (class
        b) while p's worker waits: q must end on b1 or in error, never on
        a1."""
        s = self.scenario
        server = self.start_server("--allocation-delay", "3")
        nodes = self.enroll({f"{s.prefix}-a1": {"resource_class":
                                                self.rc("a")},
                             f"{s.prefix}-b1": {"resource_class":
                                                self.rc("b")}})
        for round_ in range(_harness.rounds(1, 3)):
            p = s.request(server, "POST", "/v1/allocations",
                          {"resource_class": self.rc("a"),
                           "name": f"{s.prefix}-p{round_}"})
            assert p is not None and p.status_code == 201, p
            s.request(server, "DELETE", f"/v1/allocations/{p.json()['uuid']}")
            # Well inside p's 3 s worker delay, yet late enough that p's
            # worker surely wakes before q's (on a loaded machine too).
            time.sleep(1)
            q = s.request(server, "POST", "/v1/allocations",
                          {"resource_class": self.rc("b"),
                           "name": f"{s.prefix}-q{round_}"})
            assert q is not None and q.status_code == 201, q
            snap = s.settle_and_check(timeout=30)
            stored = snap.by_uuid(q.json()["uuid"])
            a1 = nodes[f"{s.prefix}-a1"]
            if stored is not None and stored.node_id is not None and (
                snap.nodes[stored.node_id].uuid == a1
            ):
                s.violation(f"q {stored.uuid} ended on a1 {a1}")
            for other in snap.allocations.values():
                if other.last_error and p.json()["uuid"] in other.last_error:
                    s.violation(f"allocation {other.uuid} carries p's "
                                f"error: {other.last_error}")
            s.request(server, "DELETE", f"/v1/allocations/{q.json()['uuid']}")
        self.assert_no_violations()

    def test_uuid_case_and_duplicate_conductor_names(self) -> None:
        """Issue 13 item 9: a UUID in upper and lower case is one
        allocation; two processes started at once under one conductor
        name do not both run."""
        s = self.scenario
        server = self.start_server()
        self.enroll({f"{s.prefix}-n{i}": {"resource_class": self.rc()}
                     for i in range(2)})
        given = str(uuidlib.uuid4())
        first = s.request(server, "POST", "/v1/allocations",
                          {"resource_class": self.rc(),
                           "uuid": given.upper()})
        second = s.request(server, "POST", "/v1/allocations",
                           {"resource_class": self.rc(), "uuid": given})
        assert first is not None and second is not None
        if first.status_code == 201 and second.status_code == 201:
            s.violation(f"{given.upper()} and {given} were both created")
        got = s.request(server, "GET", f"/v1/allocations/{given.upper()}")
        if got is not None and got.status_code == 200 and (
            got.json()["uuid"] != given
        ):
            s.violation(f"GET by upper case answered uuid "
                        f"{got.json()['uuid']}, not the canonical {given}")
        s.settle_and_check(timeout=30)
        self._same_name_twice()
        self.assert_no_violations()

    def _same_name_twice(self) -> None:
        s = self.scenario
        name = f"{s.prefix}-twin"
        servers = []
        for _ in range(2):
            twin = ServerProcess(self.db.url)  # type: ignore[attr-defined]
            self.addCleanup(twin.cleanup)  # type: ignore[attr-defined]
            servers.append(twin)
        for twin in servers:
            twin.launch("--conductor-name", name, *FAST)
        procs = [twin.proc for twin in servers if twin.proc is not None]
        s.note(f"started two processes as {name}: "
               f"{[p.pid for p in procs]}")
        # Registration waits at most heartbeat timeout + 2 intervals.
        deadline = time.monotonic() + HEARTBEAT_TIMEOUT + 10
        serving: list[int] = []
        while time.monotonic() < deadline:
            serving = [t.port for t in servers if _answers(t)]
            exited = [p for p in procs if p.poll() is not None]
            if len(serving) + len(exited) == 2:
                break
            time.sleep(0.2)
        if len(serving) == 2:
            s.violation(f"two live processes serve as conductor {name}")


def _answers(server: ServerProcess) -> bool:
    return (server.proc is not None and server.proc.poll() is None
            and answers(server.endpoint + "/"))


class _Backfill:
    """Item 2: two concurrent backfills of one node."""

    scenario: _harness.Scenario
    start_server: Any
    enroll: Any
    rc: Any
    deploy: Any
    assert_no_violations: Any

    def test_concurrent_backfills_leave_one_allocation_per_node(
        self,
    ) -> None:
        """Issue 13 item 2: {"node": N, "uuid": U1} and {"node": N,
        "uuid": U2} at once through two processes, on 40 nodes."""
        s = self.scenario
        servers = [self.start_server(*FAST) for _ in range(2)]
        count = _harness.rounds(40, 120)
        nodes = self.enroll({f"{s.prefix}-n{i}": {"resource_class":
                                                  self.rc()}
                             for i in range(count)})
        self.deploy(servers[0], list(nodes.values()))
        s.fault(f"{count} pairs of concurrent backfills")

        def backfill(server: Any, node: str) -> Any:
            return lambda: s.request(server, "POST", "/v1/allocations",
                                     {"node": node,
                                      "uuid": str(uuidlib.uuid4())})

        won: dict[str, int] = {}
        for node in nodes.values():
            answers = s.together([backfill(servers[0], node),
                                  backfill(servers[1], node)])
            won[node] = sum(1 for r in answers
                            if r is not None and r.status_code == 201)
        twice = [n for n, c in won.items() if c > 1]
        if twice:
            s.violation(f"{len(twice)} of {count} nodes were backfilled "
                        f"twice (201 to both): {twice[:5]}")
        s.settle_and_check(timeout=30)
        self.assert_no_violations()


class _Release:
    """Item 5 (release paths and lock order) and item 6 (take-over behind
    a frozen row lock)."""

    scenario: _harness.Scenario
    start_server: Any
    enroll: Any
    rc: Any
    deploy: Any
    assert_no_violations: Any
    kind: str
    db: Any

    def test_release_paths_race_without_deadlock(self) -> None:
        """Issue 13 item 5: undeploy, DELETE allocation, PATCH
        instance_uuid and node delete on the same allocated nodes at
        once; no node may stay in ``deleting`` with its allocation."""
        s = self.scenario
        step = 0.3
        server = self.start_server("--step-delay", str(step))
        count = _harness.rounds(12, 60)
        nodes = list(self.enroll({f"{s.prefix}-n{i}": {"resource_class":
                                                       self.rc()}
                                  for i in range(count)}).values())
        held = {}
        for node in nodes:
            resp = s.request(server, "POST", "/v1/allocations",
                             {"resource_class": self.rc(),
                              "candidate_nodes": [node]},
                             headers={"Prefer": "wait=10"})
            assert resp is not None and resp.status_code == 201, resp
            held[node] = resp.json()["uuid"]
        self.deploy(server, nodes)
        for node in nodes[::2]:  # maintenance allows every release path
            s.request(server, "PUT", f"/v1/nodes/{node}/maintenance",
                      {"reason": "fault test"})
        for node in nodes:
            s.fault(f"release race on node {node}")
            s.together(self._race(server, node, held[node], step))
        snap = s.settle_and_check(timeout=30)
        if "Fake transition of node" in server.log():
            s.note("server log: a fake-hardware step failed")
        for allocation in snap.allocations.values():
            s.violation(f"allocation {allocation.uuid} survived the "
                        f"undeploy of its node")
        self.assert_no_violations()

    def _race(self, server: Any, node: str, allocation: str,
              step: float) -> list[Any]:
        s = self.scenario

        def later(delay: float, method: str, path: str,
                  body: Any = None) -> Any:
            def call() -> Any:
                time.sleep(delay)
                return s.request(server, method, path, body)
            return call

        # The fake-hardware step that releases the allocation runs
        # ``step`` seconds after the undeploy: aim the rest around it.
        jitter = [step + s.rng.uniform(-0.03, 0.05) for _ in range(11)]
        return [
            later(0, "PUT", f"/v1/nodes/{node}/states/provision",
                  {"target": "deleted"}),
            *(later(j, "DELETE", f"/v1/allocations/{allocation}")
              for j in jitter[:8]),
            later(jitter[8], "PATCH", f"/v1/nodes/{node}",
                  [{"op": "remove", "path": "/instance_uuid"}]),
            later(jitter[9], "DELETE", f"/v1/nodes/{node}/allocation"),
            later(jitter[10], "DELETE", f"/v1/nodes/{node}"),
        ]

    def test_frozen_row_lock_does_not_stop_takeover(self) -> None:
        """Issue 13 item 6: a SIGSTOPped process holds a row lock on one
        dead conductor's allocation; the take-over of all the others
        still happens."""
        if self.kind == "sqlite":
            self.skip_scenario(  # type: ignore[attr-defined]
                "SQLite locks the whole file, not rows")
        s = self.scenario
        held = 8
        survivor = self.start_server(*FAST)
        victim = self.start_server(*FAST, "--allocation-delay", "600")
        self.enroll({f"{s.prefix}-n{i}": {"resource_class": self.rc()}
                     for i in range(held + 2)})
        for _ in range(held):
            resp = s.request(victim, "POST", "/v1/allocations",
                             {"resource_class": self.rc()})
            assert resp is not None and resp.status_code == 201, resp
        s.signal(victim, signal.SIGKILL)
        first = min(s.snapshot().allocations.values(), key=lambda a: a.id)
        holder = self._lock_row(first.id)
        s.fault(f"pid {holder.pid} holds a lock on allocation "
                f"{first.uuid}; SIGSTOP to it")
        holder.send_signal(signal.SIGSTOP)
        limit = HEARTBEAT_TIMEOUT + 1 + 15
        deadline = time.monotonic() + limit
        stuck: list[str] = []
        while time.monotonic() < deadline:
            stuck = [a.uuid for a in s.snapshot().allocations.values()
                     if a.state == "allocating" and a.id != first.id]
            if not stuck:
                break
            time.sleep(0.3)
        if stuck:
            s.violation(f"{len(stuck)} of {held - 1} unlocked allocations "
                        f"of the dead conductor still allocating {limit:.0f}"
                        f" s after the kill, behind one locked row")
        s.fault(f"SIGKILL to lock holder pid {holder.pid}")
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        s.settle_and_check(timeout=90)
        del survivor
        self.assert_no_violations()

    def _lock_row(self, allocation_id: int) -> subprocess.Popen[str]:
        script = (
            "import sys\n"
            "from sqlalchemy import create_engine, text\n"
            "engine = create_engine(sys.argv[1])\n"
            "conn = engine.connect()\n"
            "conn.begin()\n"
            "conn.execute(text('SELECT id FROM allocations WHERE id = :i "
            "FOR UPDATE'), {'i': int(sys.argv[2])})\n"
            "print('locked', flush=True)\n"
            "sys.stdin.read()\n"
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", script, self.db.url, str(allocation_id)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(_kill_quietly, proc)  # type: ignore[attr-defined]
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "locked", line
        return proc


def _kill_quietly(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)


class _Waiting:
    """Item 3 (503 after commit) and item 8 (waiting creates and request
    threads)."""

    scenario: _harness.Scenario
    start_server: Any
    enroll: Any
    rc: Any
    proxied_db: Any
    assert_no_violations: Any

    def test_outage_after_commit_is_never_503(self) -> None:
        """Issue 13 item 3: the database is cut after a ``Prefer: wait``
        create committed; the answer is not "changed nothing, retry", and
        a client retrying on 503 does not end up with two."""
        s = self.scenario
        proxy, url = self.proxied_db()
        server = self.start_server(*FAST, "--allocation-delay", "2",
                                   db_url=url)
        self.enroll({f"{s.prefix}-n{i}": {"resource_class": self.rc()}
                     for i in range(4)})
        for round_ in range(_harness.rounds(2, 6)):
            extra = {"round": round_}
            cut = threading_timer(0.4 + s.rng.uniform(0, 0.3),
                                  lambda: (s.fault("database cut for 3 s"),
                                           proxy.cut_for(3)))
            resp = s.request(server, "POST", "/v1/allocations",
                             {"resource_class": self.rc(), "extra": extra},
                             headers={"Prefer": "wait=1"}, outage=True)
            cut.join()
            proxy.wait_restored()
            answers = [resp]
            if resp is None or resp.status_code == 503:
                # What the SDK does with "changed nothing; retry".
                time.sleep(0.5)
                answers.append(s.request(
                    server, "POST", "/v1/allocations",
                    {"resource_class": self.rc(), "extra": extra},
                    outage=True))
            snap = s.wait_settled(timeout=60)
            stored = [a for a in snap.allocations.values()
                      if a.extra.get("round") == round_]
            codes = [a.status_code if a is not None else None
                     for a in answers]
            if resp is not None and resp.status_code == 503 and stored:
                s.violation(f"create answered 503 after storing "
                            f"{[a.uuid for a in stored]} (answers {codes})")
            if len(stored) > 1:
                s.violation(f"one create with a retry stored "
                            f"{len(stored)} allocations (answers {codes})")
        s.settle_and_check(timeout=60)
        self.assert_no_violations()

    def test_waiting_creates_leave_threads_for_reads(self) -> None:
        """Issue 13 item 8: 32 creates waiting (``Prefer: wait``) do not
        hold up an unrelated GET for more than a second or two."""
        s = self.scenario
        # As many workers as creates: each sleeps the delay in parallel.
        server = self.start_server("--allocation-delay", "5",
                                   "--workers", "32")
        self.enroll({f"{s.prefix}-n{i}": {"resource_class": self.rc()}
                     for i in range(32)})

        def create() -> Any:
            return s.request(server, "POST", "/v1/allocations",
                             {"resource_class": self.rc()},
                             headers={"Prefer": "wait=10"})

        def read() -> float:
            time.sleep(1.0)
            started = time.monotonic()
            s.request(server, "GET", f"/v1/nodes?resource_class={self.rc()}")
            return time.monotonic() - started

        s.fault("32 creates waiting with Prefer: wait=10")
        results = s.together([create] * 32 + [read])
        took = results[-1]
        s.note(f"unrelated GET took {took:.2f} s")
        if took > 2.0:
            s.violation(f"an unrelated GET took {took:.1f} s while 32 "
                        f"creates waited (limit 2 s)")
        s.settle_and_check(timeout=60)
        self.assert_no_violations()


def threading_timer(delay: float, action: Any) -> threading.Timer:
    timer = threading.Timer(delay, action)
    timer.start()
    return timer


#: Item 7: inputs that must be refused with 400 before any SQL runs.
_NUL = "\u0000"
_BAD_JSON = ('{"resource_class": "%s", "extra": {"x": NaN}}',
             '{"resource_class": "%s", "extra": {"x": Infinity}}',
             '{"resource_class": "%s", "extra": {"x": 1e400}}',
             '{"resource_class": "%s", "extra": {"x": -Infinity}}')


class _BadInput:
    """Item 7: NUL bytes and non-finite numbers."""

    scenario: _harness.Scenario
    start_server: Any
    enroll: Any
    rc: Any
    assert_no_violations: Any

    def test_nul_and_non_finite_numbers_are_400(self) -> None:
        """Issue 13 item 7: 400 with a clear message, never 5xx, and no
        SQL or exception text in the body."""
        s = self.scenario
        server = self.start_server()
        node = next(iter(self.enroll(
            {f"{s.prefix}-n0": {"resource_class": self.rc()}}).values()))
        rc = self.rc()
        cases: list[tuple[str, str, Any, str | None]] = [
            ("GET", f"/v1/allocations?resource_class=a{_NUL}b", None, None),
            ("GET", f"/v1/nodes?resource_class=a{_NUL}b", None, None),
            ("GET", f"/v1/allocations/a{_NUL}b", None, None),
            ("GET", f"/v1/nodes/a{_NUL}b", None, None),
            ("POST", "/v1/allocations",
             {"resource_class": rc, "name": f"x{_NUL}y"}, None),
            ("POST", "/v1/allocations",
             {"resource_class": rc, "extra": {"k": f"v{_NUL}"}}, None),
            ("POST", "/v1/allocations",
             {"resource_class": f"{rc}{_NUL}"}, None),
            ("PATCH", f"/v1/nodes/{node}",
             [{"op": "add", "path": "/extra/k", "value": f"v{_NUL}"}], None),
        ]
        cases += [("POST", "/v1/allocations", None, t % rc)
                  for t in _BAD_JSON]
        for field in ("extra", "driver_info", "properties"):
            for value in ("NaN", "Infinity", "1e400"):
                cases.append((
                    "PATCH", f"/v1/nodes/{node}", None,
                    f'[{{"op": "add", "path": "/{field}/k", '
                    f'"value": {value}}}]'))
            cases.append(("POST", "/v1/nodes", None,
                          f'{{"driver": "fake-hardware", "{field}": '
                          f'{{"k": 1e400}}}}'))
        for method, path, body, raw in cases:
            self._expect_400(server, method, path, body, raw)
        s.settle_and_check(timeout=30)
        self.assert_no_violations()

    def _expect_400(self, server: Any, method: str, path: str, body: Any,
                    raw: str | None) -> None:
        s = self.scenario
        with s._lock:
            s.requests += 1
        s.fault(f"bad input {method} {path!r} {body or raw}")
        try:
            resp = requests.request(
                method, server.endpoint + path.replace(_NUL, "%00"),
                json=body, data=raw,
                headers={**_harness.HEADERS,
                         "Content-Type": "application/json"},
                timeout=30)
        except requests.RequestException as exc:
            s.violation(f"{method} {path!r}: {exc}")
            return
        s.note(f"-> {resp.status_code} {resp.text[:160]}")
        text = resp.text.lower()
        leaks = [w for w in ("select ", "insert ", "update ", "psycopg",
                             "pymysql", "sqlalchemy", "traceback")
                 if w in text]
        if resp.status_code != 400 or leaks:
            leaked = f" leaking {leaks}" if leaks else ""
            s.violation(f"{method} {path!r} {body or raw} answered "
                        f"{resp.status_code} (want 400){leaked}: "
                        f"{resp.text[:300]}")


for _mixin in (_IdReuse, _Backfill, _Release, _Waiting, _BadInput):
    _harness.classes_for(_mixin, globals())
