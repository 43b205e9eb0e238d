"""The scenario harness: real servers, a seed, a schedule, figures.

Every scenario gets a :class:`Scenario`: a seeded random generator (the
seed comes from ``BAREMETAL_ALLOC_FAULT_SEED`` when set), a resource-class
prefix of its own, a schedule of what it did (requests, signals, cuts,
with times), and counters (faults injected, requests made, violations).
When a scenario ends, :meth:`Scenario.settle_and_check` waits (bounded)
until nothing is ``allocating`` and reads the invariants from the
database (:mod:`._invariants`); any violation fails the test with the
violations, the schedule and the one command that replays it.

Figures: each scenario appends one JSON line to
``BAREMETAL_ALLOC_FAULT_FIGURES`` (default: a file in the test class's
temporary directory) and each class prints one summary line per database,
``faults: <db> scenarios=N faults=N requests=N violations=N``;
``python -m baremetal_allocclient.tests.functional.faults.figures FILE``
adds up a whole run.

Only processes the scenario started are ever signalled, by PID.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import json
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import requests
import testtools
from testtools.content import text_content

from baremetal_allocclient.tests.fixtures import databases, launcher
from baremetal_allocclient.tests.fixtures.launcher import (
    ServerProcess,
)
from baremetal_allocclient.tests.functional.faults import _invariants
from baremetal_allocclient.tests.functional.multiprocess import (
    _cluster,
    _proxy,
)

SOAK_ENV = "BAREMETAL_ALLOC_FAULT_SOAK"
SEED_ENV = "BAREMETAL_ALLOC_FAULT_SEED"
FIGURES_ENV = "BAREMETAL_ALLOC_FAULT_FIGURES"
HEADERS = {"X-OpenStack-Ironic-API-Version": "latest"}
#: Bounded wait for "nothing allocating, no transition running".
SETTLE_TIMEOUT = 60.0
_DB_ENVS = (databases.POSTGRESQL_ENV, databases.MYSQL_ENV)


def soak() -> bool:
    """True when the long runs were asked for."""
    return os.environ.get(SOAK_ENV, "") not in ("", "0")


def rounds(ci: int, long: int) -> int:
    """``ci`` normally, ``long`` under BAREMETAL_ALLOC_FAULT_SOAK."""
    return long if soak() else ci


def _seed() -> int:
    value = os.environ.get(SEED_ENV)
    if value:
        return int(value)
    return random.SystemRandom().randrange(2**32)


class Scenario:
    """One scenario's seed, schedule, counters and invariant checks."""

    def __init__(self, kind: str, test_id: str, db_url: str) -> None:
        self.kind = kind
        self.test_id = test_id
        self.seed = _seed()
        self.rng = random.Random(self.seed)
        self.prefix = f"f{self.rng.getrandbits(40):010x}"
        #: Numbers the conductors the scenario starts: names that never
        #: collide (a random four-hex suffix once did) and that a replay
        #: of the seed repeats.
        self.conductors = itertools.count(1)
        self.reader = _invariants.DatabaseReader(db_url)
        self.started = time.monotonic()
        self.schedule: list[str] = []
        self.faults = 0
        self.requests = 0
        self.found: list[str] = []
        self.skipped = False
        self._lock = threading.Lock()
        self.note(f"seed {self.seed}, prefix {self.prefix}, db {kind}")

    # -- the record ----------------------------------------------------
    def note(self, event: str) -> None:
        """Append one line to the schedule (time since the start)."""
        at = time.monotonic() - self.started
        with self._lock:
            self.schedule.append(f"{at:8.3f} {event}")

    def violation(self, text: str) -> None:
        """Record an invariant or promise broken (a state still broken at
        a later check is counted once)."""
        with self._lock:
            repeated = text in self.found
            if not repeated:
                self.found.append(text)
        self.note(f"VIOLATION {'(again) ' if repeated else ''}{text}")

    def replay_command(self) -> str:
        envs = " ".join(
            f"{name}={os.environ[name]!r}" for name in _DB_ENVS
            if os.environ.get(name)
        )
        return (f"{envs} {SEED_ENV}={self.seed} .venv/bin/python -m "
                f"testtools.run {self.test_id}").strip()

    def report(self) -> str:
        lines = [f"scenario {self.test_id} on {self.kind}: seed {self.seed}",
                 f"replay: {self.replay_command()}"]
        if self.found:
            lines.append(f"{len(self.found)} violation(s):")
            lines += [f"  - {v}" for v in self.found[:40]]
            if len(self.found) > 40:
                lines.append(f"  ... and {len(self.found) - 40} more")
        lines.append("schedule:")
        with self._lock:
            lines += self.schedule[-400:]
        return "\n".join(lines)

    def figures(self) -> dict[str, Any]:
        return {"test": self.test_id, "db": self.kind, "seed": self.seed,
                "faults": self.faults, "requests": self.requests,
                "violations": len(self.found),
                "seconds": round(time.monotonic() - self.started, 1)}

    # -- actions -------------------------------------------------------
    def request(
        self, server: ServerProcess, method: str, path: str,
        body: Any = None, headers: dict[str, str] | None = None,
        timeout: float = 60, outage: bool = False,
    ) -> requests.Response | None:
        """One HTTP request, counted and noted.  A 500 is always a
        violation; a 503 too unless ``outage`` (the database was cut on
        purpose).  None when the connection failed."""
        with self._lock:
            self.requests += 1
        try:
            resp = requests.request(
                method, server.endpoint + path, json=body,
                headers={**HEADERS, **(headers or {})}, timeout=timeout,
            )
        except requests.RequestException as exc:
            self.note(f"{method} {path} -> {type(exc).__name__}")
            return None
        self.note(f"{method} {path} {_short(body)}-> {resp.status_code}")
        if resp.status_code >= 500 and not (
            outage and resp.status_code == 503
        ):
            self.violation(f"{method} {path} answered {resp.status_code}: "
                           f"{resp.text[:300]}")
        return resp

    def signal(self, server: ServerProcess, sig: signal.Signals) -> None:
        """Send ``sig`` to a server process this scenario started."""
        assert server.proc is not None and server.proc.poll() is None
        self.fault(f"{sig.name} to pid {server.proc.pid}")
        server.proc.send_signal(sig)
        if sig == signal.SIGKILL:
            server.proc.wait(timeout=10)

    def fault(self, description: str) -> None:
        """Count and note one injected fault."""
        with self._lock:
            self.faults += 1
        self.note(f"FAULT {description}")

    def together(
        self, calls: Sequence[Callable[[], Any]], timeout: float = 120
    ) -> list[Any]:
        """Run ``calls`` at once: threads released by one barrier."""
        if not calls:
            return []
        barrier = threading.Barrier(len(calls))

        def run(call: Callable[[], Any]) -> Any:
            barrier.wait(timeout=30)
            return call()

        with concurrent.futures.ThreadPoolExecutor(len(calls)) as pool:
            futures = [pool.submit(run, c) for c in calls]
            return [f.result(timeout=timeout) for f in futures]

    # -- checks --------------------------------------------------------
    def snapshot(self) -> _invariants.Snapshot:
        return self.reader.snapshot(self.prefix)

    def wait_settled(
        self, timeout: float = SETTLE_TIMEOUT
    ) -> _invariants.Snapshot:
        """Poll the database until settled or ``timeout`` (bounded)."""
        deadline = time.monotonic() + timeout
        while True:
            snap = self.snapshot()
            if _invariants.is_settled(snap) or time.monotonic() > deadline:
                return snap
            time.sleep(0.2)

    def settle_and_check(
        self, timeout: float = SETTLE_TIMEOUT,
        claims: Callable[[_invariants.Snapshot], list[str]] | None = None,
    ) -> _invariants.Snapshot:
        """Wait until settled, then record every invariant violation."""
        snap = self.wait_settled(timeout)
        for text in _invariants.violations(snap):
            self.violation(text)
        if claims is not None:
            for text in claims(snap):
                self.violation(text)
        self.note(f"checked: {len(snap.nodes)} nodes, "
                  f"{len(snap.allocations)} allocations")
        return snap

    def check_now(self) -> None:
        """The structural invariants on the current rows (no settling)."""
        for text in _invariants.violations(self.snapshot(), settle=False):
            self.violation(text)


def _short(body: Any) -> str:
    if body is None:
        return ""
    text = json.dumps(body, sort_keys=True)
    return (text if len(text) < 120 else text[:117] + "...") + " "


class FaultCase(testtools.TestCase):
    """Base class: one scratch database per class, a Scenario per test.

    Concrete classes set ``kind`` ("sqlite", "postgresql", "mysql"); the
    PostgreSQL and MariaDB ones skip when their URL variable is unset.
    """

    kind: ClassVar[str]
    db: ClassVar[databases.ScratchDatabase]
    workdir: ClassVar[str]
    totals: ClassVar[dict[str, int]]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.db, cls.workdir = _cluster.scratch(cls.addClassCleanup, cls.kind)
        cls.totals = {"scenarios": 0, "faults": 0, "requests": 0,
                      "violations": 0}
        cls.addClassCleanup(cls._print_totals)

    @classmethod
    def _print_totals(cls) -> None:
        t = cls.totals
        print(f"\nfaults: {cls.kind} scenarios={t['scenarios']} "
              f"faults={t['faults']} requests={t['requests']} "
              f"violations={t['violations']} ({cls.__name__})",
              file=sys.stderr)

    def setUp(self) -> None:
        super().setUp()
        self.scenario = Scenario(self.kind, self.id(), self.db.url)
        self.addCleanup(self._record)

    def skip_scenario(self, reason: str) -> None:
        """Skip (not counted in the figures)."""
        self.scenario.skipped = True
        self.skipTest(reason)

    def _record(self) -> None:
        scenario = self.scenario
        scenario.reader.dispose()
        if scenario.skipped:
            return
        figures = scenario.figures()
        totals = type(self).totals
        totals["scenarios"] += 1
        for key in ("faults", "requests", "violations"):
            totals[key] += figures[key]
        path = os.environ.get(FIGURES_ENV) or os.path.join(
            self.workdir, "figures.jsonl")
        with open(path, "a", encoding="utf-8") as stream:
            stream.write(json.dumps(figures) + "\n")
        if not scenario.found:  # violations are in the failure itself
            self.addDetail("fault-scenario",
                           text_content(scenario.report()))

    def assert_no_violations(self) -> None:
        """Fail with the report when the scenario found any violation."""
        if self.scenario.found:
            self.fail(self.scenario.report())

    # -- servers and nodes -----------------------------------------------
    def start_server(
        self, *extra: str, name: str | None = None,
        db_url: str | None = None,
    ) -> ServerProcess:
        """A ``serve`` process on the class's database (stopped at the
        end of the test)."""
        name = name or (
            f"{self.scenario.prefix}-c{next(self.scenario.conductors)}")
        server = _cluster.start(db_url or self.db.url, name, *extra)
        self.addCleanup(_stop_quietly, server)
        assert server.proc is not None
        self.scenario.note(f"started {name} pid {server.proc.pid} "
                           f"{' '.join(extra)}")
        return server

    def proxied_db(self) -> tuple[_proxy.TcpProxy, str]:
        """A loopback proxy to the class's database and the URL through
        it; SkipTest on SQLite (a local file has no connection to cut)."""
        if self.kind == "sqlite":
            self.skip_scenario("SQLite is a local file: no connection to "
                               "cut")
        proxy, url = _proxy.in_front_of(self.db.url)
        self.addCleanup(proxy.stop)
        self.addCleanup(proxy.wait_restored)
        return proxy, url

    def enroll(self, nodes: dict[str, dict[str, Any]]) -> dict[str, str]:
        """Enroll ``available`` nodes (name -> fields; the resource class
        is prefixed with the scenario's prefix); name -> UUID."""
        launcher.enroll(self.db.url, self.workdir, {
            name: {"driver": "fake-hardware", **fields}
            for name, fields in nodes.items()})
        snap = self.scenario.snapshot()
        return {n.name: n.uuid for n in snap.nodes.values()
                if n.name in nodes}

    def rc(self, suffix: str = "a") -> str:
        """A resource class of this scenario."""
        return f"{self.scenario.prefix}-{suffix}"

    def deploy(self, server: ServerProcess, uuids: Sequence[str]) -> None:
        """Move nodes to ``active`` (fake deploy), without allocations."""
        for uuid in uuids:
            resp = self.scenario.request(
                server, "PUT", f"/v1/nodes/{uuid}/states/provision",
                {"target": "active"})
            assert resp is not None
            self.assertEqual(202, resp.status_code, resp.text)
        for uuid in uuids:
            server.wait_node(uuid, "active")


def _stop_quietly(server: ServerProcess) -> None:
    """SIGCONT first (a stopped process ignores SIGTERM), then stop."""
    if server.proc is not None and server.proc.poll() is None:
        server.proc.send_signal(signal.SIGCONT)
    server.cleanup()


def classes_for(
    mixin: type, namespace: dict[str, Any], kinds: Sequence[str] = (
        "sqlite", "postgresql", "mysql")
) -> None:
    """Define ``<Kind><Mixin>`` test classes, one per database kind, in
    ``namespace`` (a module's ``globals()``)."""
    label = {"sqlite": "SQLite", "postgresql": "PostgreSQL",
             "mysql": "MySQL"}
    base = mixin.__name__.lstrip("_")
    for kind in kinds:
        name = f"{label[kind]}{base}"
        namespace[name] = type(name, (mixin, FaultCase), {
            "kind": kind, "__module__": namespace["__name__"],
            "__qualname__": name,
        })
