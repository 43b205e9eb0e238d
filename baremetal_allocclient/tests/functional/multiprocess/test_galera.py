"""Multi-master MariaDB Galera: one ``serve`` process per Galera node.

One three-node cluster (:mod:`_galera`) for the class; the tests run in
their numbered order because the last two take nodes away: a node is
killed mid-burst (the other two keep the Primary component), then one of
the two survivors is cut off, which leaves no Primary component at all.

Galera does not replicate row locks: ``SELECT ... FOR UPDATE`` excludes
only transactions of the same node, and two nodes' transactions that
wrote the same rows conflict at COMMIT (1213, a certification failure).
Every test checks its invariants on every reachable node.  Figures go
to stderr and, when ``BAREMETAL_ALLOC_GALERA_FIGURES`` names a file, one
JSON line per test is appended to it (``tools/run-tests`` prints them).
"""

from __future__ import annotations

import collections
import concurrent.futures
import json
import os
import sys
import threading
import time
import uuid as uuidlib
from typing import Any, ClassVar

import fixtures
import requests
import testtools

from baremetal_allocclient.tests.fixtures.launcher import (
    ServerProcess,
    upgrade,
)
from baremetal_allocclient.tests.functional.multiprocess import (
    _cluster,
    _galera,
)

FIGURES_ENV = "BAREMETAL_ALLOC_GALERA_FIGURES"
HEARTBEAT_TIMEOUT = 3.0
#: The answers a request may get while a node is lost: 503 with one of
#: these messages, never a 500.
CLEAR_503 = ("The database is temporarily unavailable",
             "The database became unavailable while this change was being "
             "committed")
_HEADERS = {"X-OpenStack-Ironic-API-Version": "latest"}


def _fault(body: Any) -> str:
    try:
        return str(json.loads(body["error_message"])["faultstring"])
    except (TypeError, KeyError, ValueError):
        return str(body)


class GaleraTests(testtools.TestCase):
    cluster: ClassVar[_galera.GaleraCluster]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.cluster = _galera.GaleraCluster(3)
        cls.addClassCleanup(cls.cluster.stop)
        cls.cluster.start()
        upgrade(cls.url(0))

    @classmethod
    def url(cls, index: int) -> str:
        return cls.cluster.nodes[index].url(cls.cluster.database)

    def setUp(self) -> None:
        super().setUp()
        self.rc = "rc-" + uuidlib.uuid4().hex[:12]
        self.prefix = uuidlib.uuid4().hex[:6]
        self.workdir = self.useFixture(fixtures.TempDir()).path

    # -- helpers -------------------------------------------------------
    def _serve(self, index: int, name: str, *extra: str) -> ServerProcess:
        server = _cluster.start(self.url(index), f"{self.prefix}-{name}",
                                *_cluster.FAST, *extra)
        self.addCleanup(server.cleanup)
        return server

    def _invariants(self, nodes: list[int], expected: int | None
                    ) -> tuple[int, list[Any]]:
        """Violations found on each of ``nodes`` (read with
        ``wsrep_sync_wait``, so each node has applied everything
        committed before); also checks that the nodes agree."""
        violations = 0
        views: list[Any] = []
        for index in nodes:
            view, found = _node_view(self.cluster.nodes[index],
                                     self.cluster.database, self.rc)
            violations += len(found)
            self.assertEqual([], found, f"node{index}")
            views.append(view)
        for index, view in zip(nodes[1:], views[1:], strict=True):
            self.assertEqual(views[0], view, f"node{index} disagrees")
        if expected is not None:
            active = sum(1 for _u, state, _n in views[0]
                         if state == "active")
            self.assertEqual(expected, active)
        return violations, views[0]

    def _record(self, test: str, figures: dict[str, Any]) -> None:
        figures = {"test": test, **figures}
        print(f"\ngalera {test}: {json.dumps(figures)}", file=sys.stderr)
        path = os.environ.get(FIGURES_ENV)
        if path:
            with open(path, "a", encoding="utf-8") as stream:
                stream.write(json.dumps(figures) + "\n")

    # -- tests ---------------------------------------------------------
    def test_1_burst_on_three_masters(self) -> None:
        _cluster.enroll(self.url(0), self.workdir, 120, self.rc)
        servers = [self._serve(i, f"s{i}") for i in range(3)]
        before = self.cluster.counters()
        posted = _cluster.post_many(servers, 160,
                                    {"resource_class": self.rc}, 24)
        statuses = collections.Counter(s for s, _b in posted)
        self.assertEqual({201: 160}, dict(statuses))
        final = _cluster.wait_settled(servers[0], self.rc, timeout=120)
        states = collections.Counter(a["state"] for a in final)
        self.assertEqual({"active": 120, "error": 40}, dict(states))
        violations, _view = self._invariants([0, 1, 2], 120)
        after = self.cluster.counters()
        self._record("burst", {
            "requests": len(posted), "statuses": dict(statuses),
            "5xx": {s: n for s, n in statuses.items() if s >= 500},
            **_delta(before, after), "violations": violations})
        for server in servers:
            self.assertNotIn("Traceback", server.log())

    def test_2_takeover_race_across_nodes(self) -> None:
        """Two survivors on different Galera nodes claim the same
        orphans: one commit of each contested row fails certification
        (1213 at COMMIT), which is a lost race, not a failed round."""
        held = 60
        _cluster.enroll(self.url(0), self.workdir, held, self.rc)
        victim = self._serve(0, "victim", "--allocation-delay", "600",
                             "--workers", "4")
        survivors = {name: self._serve(i, name, "--workers", "64",
                                       "--takeover-interval", "0.2")
                     for i, name in ((1, "a"), (2, "b"))}
        posted = _cluster.post_many([victim], held,
                                    {"resource_class": self.rc}, 16)
        self.assertEqual([201] * held, [s for s, _b in posted])
        before = self.cluster.counters()
        _cluster.kill(victim)
        killed = time.monotonic()
        final = _cluster.wait_settled(survivors["a"], self.rc, timeout=60)
        latency = time.monotonic() - killed
        self.assertEqual(["active"] * held, [a["state"] for a in final])
        violations, _view = self._invariants([0, 1, 2], held)
        after = self.cluster.counters()
        logs = {n: s.log() for n, s in survivors.items()}
        failed_rounds = sum(log.count("Take-over round failed")
                            for log in logs.values())
        self._record("takeover", {
            "orphans": held, "latency_s": round(latency, 1),
            **_delta(before, after), "failed_rounds": failed_rounds,
            "violations": violations})
        self.assertEqual(0, failed_rounds)
        for name, log in logs.items():
            self.assertNotIn("Traceback", log, name)
        self.assertLess(latency, HEARTBEAT_TIMEOUT + 20)

    def test_3_node_killed_mid_burst(self) -> None:
        _cluster.enroll(self.url(0), self.workdir, 90, self.rc)
        servers = [self._serve(i, f"k{i}") for i in range(3)]
        before = self.cluster.counters()
        results: list[tuple[int, Any]] = []
        burst = threading.Thread(target=lambda: results.extend(
            _post_spread(servers, 120, self.rc)))
        burst.start()
        time.sleep(0.5)
        self.cluster.kill(self.cluster.nodes[2])
        burst.join(timeout=180)
        self.assertFalse(burst.is_alive())
        statuses = collections.Counter(s for s, _b in results)
        unclear = [(s, _fault(b)) for s, b in results
                   if s != 201 and not (s == 503 and _fault(b).startswith(
                       CLEAR_503))]
        # Nothing stuck: what the killed node's server stored is taken
        # over once its heartbeat stops (it cannot reach its database).
        final = _cluster.wait_settled(servers[0], self.rc, timeout=90)
        violations, view = self._invariants([0, 1], None)
        active = sum(1 for _u, state, _n in view if state == "active")
        self._record("node_killed", {
            "requests": len(results), "statuses": dict(statuses),
            "5xx": {s: n for s, n in statuses.items() if s >= 500},
            "stored": len(final), "active": active,
            **_delta(before, self.cluster.counters()),
            "violations": violations})
        self.assertEqual([], unclear)
        self.assertEqual(min(len(final), 90), active)
        for server in servers[:2]:
            self.assertNotIn("Traceback", server.log())

    def test_4_quorum_loss_answers_503(self) -> None:
        nodes = self.cluster.nodes
        self.cluster.kill(nodes[2])
        servers = [self._serve(i, f"q{i}") for i in range(2)]
        self.cluster.isolate(nodes[1], True)
        deadline = time.monotonic() + 30
        while any(n.status("wsrep_ready") == "ON" for n in nodes[:2]):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.2)
        answers: list[tuple[int, str]] = []
        for server in servers:
            for method, path, body in (
                ("GET", "/v1/allocations", None),
                ("GET", "/v1/nodes", None),
                ("POST", "/v1/allocations", {"resource_class": self.rc}),
            ):
                resp = requests.request(method, server.endpoint + path,
                                        json=body, headers=_HEADERS,
                                        timeout=60)
                answers.append((resp.status_code, _fault(resp.json())))
        statuses = collections.Counter(s for s, _m in answers)
        self._record("quorum_loss", {
            "requests": len(answers), "statuses": dict(statuses),
            "5xx": {s: n for s, n in statuses.items() if s >= 500}})
        for status, message in answers:
            self.assertEqual(503, status, message)
            self.assertTrue(message.startswith(CLEAR_503), message)


def _post_spread(servers: list[ServerProcess], count: int, rc: str
                 ) -> list[tuple[int, Any]]:
    """``count`` creates spread over ``servers``; a connection error
    counts as status 0 (the server itself never refuses)."""

    def one(index: int) -> tuple[int, Any]:
        server = servers[index % len(servers)]
        try:
            resp = requests.post(server.endpoint + "/v1/allocations",
                                 json={"resource_class": rc},
                                 headers=_HEADERS, timeout=120)
        except requests.RequestException as exc:
            return 0, str(exc)
        try:
            return resp.status_code, resp.json()
        except ValueError:
            return resp.status_code, resp.text

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        return list(pool.map(one, range(count)))


def _node_view(node: _galera.Node, database: str, rc: str
               ) -> tuple[list[tuple[str, str, Any]], list[str]]:
    """(sorted (uuid, state, node uuid) of ``rc``'s allocations, the
    invariant violations) as one Galera node sees them."""
    with node.connect(database) as conn, conn.cursor() as cur:
        cur.execute("SET SESSION wsrep_sync_wait = 1")
        cur.execute(
            "SELECT a.uuid, a.state, n.uuid FROM allocations a "
            "LEFT JOIN nodes n ON n.id = a.node_id "
            "WHERE a.resource_class = %s ORDER BY a.uuid", (rc,))
        view = [tuple(row) for row in cur.fetchall()]
        checks = {
            "node given twice": (
                "SELECT node_id FROM allocations WHERE resource_class = %s "
                "AND node_id IS NOT NULL GROUP BY node_id "
                "HAVING COUNT(*) > 1"),
            "active without its node": (
                "SELECT a.uuid FROM allocations a LEFT JOIN nodes n "
                "ON n.allocation_id = a.id WHERE a.resource_class = %s "
                "AND a.state = 'active' AND (n.id IS NULL "
                "OR n.id <> a.node_id)"),
            "node held by a non-active allocation": (
                "SELECT n.uuid FROM nodes n JOIN allocations a "
                "ON a.id = n.allocation_id WHERE n.resource_class = %s "
                "AND (a.state <> 'active' OR a.node_id <> n.id)"),
            "still allocating": (
                "SELECT uuid FROM allocations WHERE resource_class = %s "
                "AND state = 'allocating'"),
        }
        found: list[str] = []
        for what, sql in checks.items():
            cur.execute(sql, (rc,))
            found.extend(f"{what}: {row[0]}" for row in cur.fetchall())
    return view, found  # type: ignore[return-value]


def _delta(before: dict[int, dict[str, int]],
           after: dict[int, dict[str, int]]) -> dict[str, int]:
    """Growth of each conflict counter, summed over the nodes reachable
    both times (a killed node's counters are lost with it)."""
    return {name: sum(after[i][name] - before[i][name]
                      for i in after if i in before)
            for name in _galera.COUNTERS}
