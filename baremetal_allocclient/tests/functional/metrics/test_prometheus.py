"""A real Prometheus scrapes two ``serve`` processes on one PostgreSQL
database while a scripted workload runs; its PromQL answers must be what
the workload did.

The workload: allocations made on both processes (``Prefer: wait``),
failures emptied by two funnel steps (the resource class, the traits),
an allocation waiting in line and served when a node is released, a
lease renewed and then expired (released by the expiry of process A), and
a third process killed with allocations still ``allocating``, which A or
B take over.  Counters are per process (``conductor``), so the checks sum
them over the processes, over the last minutes (the killed process's
series end with it).  The fleet's gauges come from the database and are
the same on both targets.

Debian's ``prometheus`` package (``.ci/run`` installs it when missing);
skipped, saying so, without it or without PostgreSQL.
"""

from __future__ import annotations

import datetime
import time
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

import requests
import testtools

from baremetal_allocclient import leases
from baremetal_allocclient.tests.fixtures.launcher import ServerProcess
from baremetal_allocclient.tests.fixtures.peers import started
from baremetal_allocclient.tests.functional.metrics._prometheus import (
    BINARY,
    SCRAPE,
    Prometheus,
)
from baremetal_allocclient.tests.functional.multiprocess import _cluster

HEADERS = {"X-OpenStack-Ironic-API-Version": "latest"}
QUEUE = {**HEADERS, "X-Baremetal-Alloc-Extensions": "queue"}
NODES = 6


def _eventually(check: Callable[[], Any], within: float = 60) -> Any:
    """``check()`` once it stops raising AssertionError."""
    deadline = time.monotonic() + within
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
        time.sleep(SCRAPE)


class PrometheusTests(testtools.TestCase):
    kind: ClassVar[str] = "postgresql"

    def setUp(self) -> None:
        super().setUp()
        if BINARY is None:
            self.skipTest("prometheus is not installed (Debian's "
                          "'prometheus' package; .ci/run installs it)")
        self.db, self.rc = _cluster.fleet(self.addCleanup, self.kind, NODES)
        prefix = uuid.uuid4().hex[:6]
        self.a = self._serve(f"a-{prefix}", "--expire-leases", "1")
        self.b = self._serve(f"b-{prefix}")
        self.prometheus = started(Prometheus(
            [f"127.0.0.1:{server.port}" for server in (self.a, self.b)]))
        self.addCleanup(self.prometheus.close)
        self.prefix = prefix

    def _serve(self, name: str, *extra: str) -> ServerProcess:
        server = _cluster.start(self.db.url, name, *_cluster.FAST,
                                "--queue-interval", "0.2", *extra)
        self.addCleanup(server.cleanup)
        return server

    def _create(self, server: ServerProcess, body: dict[str, Any],
                headers: dict[str, str] | None = None) -> Any:
        answer = requests.post(
            server.endpoint + "/v1/allocations", timeout=60,
            headers={**HEADERS, "Prefer": "wait=10", **(headers or {})},
            json=body)
        self.assertEqual(201, answer.status_code, answer.text)
        return answer.json()

    def _workload(self) -> dict[str, int]:
        """Run it; what it did, to compare with Prometheus."""
        soon = datetime.datetime.now(datetime.timezone.utc)
        lease = {leases.EXPIRES_KEY: leases.format_timestamp(
            soon + datetime.timedelta(hours=1))}
        held = [self._create(server, {"resource_class": self.rc,
                                      "extra": extra})
                for server, extra in ((self.a, {}), (self.b, lease),
                                      (self.a, {}), (self.b, {}))]
        self.assertEqual(["active"] * 4, [h["state"] for h in held])
        for body in ({"resource_class": "rc-none-" + self.prefix},
                     {"resource_class": self.rc,
                      "traits": ["CUSTOM_NOBODY_HAS_IT"]}):
            self.assertEqual("error", self._create(self.b, body)["state"])
        # The last two nodes: both taken, then one allocation waits in
        # line until a release gives it the first allocation's node.
        held.append(self._create(self.a, {"resource_class": self.rc}))
        held.append(self._create(self.b, {"resource_class": self.rc}))
        waiting = self._create(self.a, {"resource_class": self.rc,
                                        "queue": {"timeout": 60}}, QUEUE)
        self.assertEqual("allocating", waiting["state"])
        self.b.expect(204, "DELETE", f"/v1/allocations/{held[0]['uuid']}")
        _eventually(lambda: self.assertEqual("active", self.a.expect(
            200, "GET", f"/v1/allocations/{waiting['uuid']}")["state"]))
        # The lease renewed into the past: A's expiry releases it.
        past = leases.format_timestamp(soon - datetime.timedelta(minutes=1))
        self.b.expect(200, "PATCH", f"/v1/allocations/{held[1]['uuid']}",
                      [{"op": "replace", "path": "/extra/" +
                        leases.EXPIRES_KEY.replace("~", "~0")
                        .replace("/", "~1"), "value": past}])
        _eventually(lambda: self.assertEqual(404, self.a.request(
            "GET", f"/v1/allocations/{held[1]['uuid']}").status_code))
        self._orphan()
        return {"active": 4 + 2 + 1 + 1, "errors": 2, "api_releases": 1,
                "expired": 1, "renewed": 1, "orphans": 1,
                "created": 4 + 2 + 2 + 1}

    def _orphan(self) -> None:
        """An allocation left ``allocating`` by a process killed at once
        (on the node the lease gave back), taken over and settled by A
        or B."""
        c = self._serve(f"c-{self.prefix}", "--allocation-delay", "30")
        left = requests.post(c.endpoint + "/v1/allocations", headers=HEADERS,
                             json={"resource_class": self.rc}, timeout=30)
        self.assertEqual(201, left.status_code, left.text)
        _cluster.kill(c)
        _eventually(lambda: self.assertEqual("active", self.a.expect(
            200, "GET", f"/v1/allocations/{left.json()['uuid']}")["state"]))

    def test_promql_answers_what_the_workload_did(self) -> None:
        did = self._workload()
        p = self.prometheus
        recent = "[10m]"

        def total(metric: str, selector: str = "") -> dict[str, float]:
            return p.query(f"sum by (state, step, path, action) "
                           f"(max_over_time(baremetal_alloc_{metric}"
                           f"{{{selector}}}{recent}))")

        def counted() -> None:
            settled = total("allocations_settled_total")
            self.assertEqual(did["active"], settled["state=active"])
            self.assertEqual(did["errors"], settled["state=error"])
            self.assertEqual({"step=resource_class": 1.0,
                              "step=traits": 1.0},
                             total("allocation_failures_total"))
            self.assertEqual(did["expired"], total(
                "lease_expiries_total")["action=release"])
            releases = total("releases_total")
            self.assertEqual(did["expired"], releases["path=lease_expiry"])
            self.assertEqual(did["api_releases"], releases["path=api"])
            self.assertEqual({"": float(did["renewed"])},
                             total("lease_renewals_total"))
            self.assertEqual({"": float(did["orphans"])},
                             total("orphans_claimed_total"))
            self.assertEqual(
                {"state=active": 1.0},
                total("line_wait_seconds_count"))
        _eventually(counted)
        listed = self.a.expect(200, "GET", "/v1/allocations")["allocations"]
        active = sum(1 for a in listed if a["state"] == "active")

        def fleet() -> None:
            nodes = p.query(f"max by (state) (baremetal_alloc_nodes"
                            f"{{resource_class='{self.rc}'}})")
            self.assertEqual(float(active), nodes["state=allocated"])
            self.assertEqual(float(NODES - active),
                             nodes.get("state=available", 0.0))
            self.assertEqual({}, p.query(
                "baremetal_alloc_line_depth > 0"))
            # Both targets answer the same fleet (one database).
            both = p.query(f"baremetal_alloc_nodes{{resource_class="
                           f"'{self.rc}',state='allocated'}}")
            self.assertEqual({float(active)}, set(both.values()))
            self.assertEqual(2, len(both))
        _eventually(fleet)
        codes = p.query("sum by (status) (max_over_time("
                        "baremetal_alloc_http_requests_total{route="
                        "'/v1/allocations',method='POST'}" + recent + "))")
        self.assertEqual({"status=201": float(did["created"])}, codes)
        print(f"\nworkload: {did}; Prometheus: settled "
              f"{total('allocations_settled_total')}, failures "
              f"{total('allocation_failures_total')}, releases "
              f"{total('releases_total')}, POST 201s {codes}")
