"""Waiting in line (the queue extension) with real server processes.

Two processes share one database; allocations wait in line alternately
on both, and nodes are released alternately through both, so the order
can only hold if it holds across processes.  Queue rounds run every
0.2 s (``--queue-interval``).
"""

from __future__ import annotations

import time
from typing import Any

import requests
import testtools
from sqlalchemy import select

from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Allocation
from baremetal_allocclient.tests.fixtures.launcher import (
    ServerProcess,
)
from baremetal_allocclient.tests.functional.multiprocess import (
    _cluster,
)

HEADERS = {"X-OpenStack-Ironic-API-Version": "latest",
           "X-Baremetal-Alloc-Extensions": "queue"}
QUEUE_ROUNDS = ("--queue-interval", "0.2")
#: Generous: a loaded shared machine, queue rounds every 0.2 s.
SETTLE = 20.0


class _QueueTests(_cluster.ClusterCase):
    """Mixin; ``kind`` is set by the concrete classes."""

    def setUp(self) -> None:
        super().setUp()
        _cluster.enroll(self.db.url, self.workdir, 2, self.rc)

    def _start(self, name: str, *extra: str) -> ServerProcess:
        server = _cluster.start(self.db.url, f"{self.prefix}-{name}",
                                *_cluster.FAST, *QUEUE_ROUNDS, *extra)
        self.case.addCleanup(server.cleanup)
        return server

    def _create(self, server: ServerProcess, queue: bool,
                timeout: float = 600) -> dict[str, Any]:
        body: dict[str, Any] = {"resource_class": self.rc}
        if queue:
            body["queue"] = {"timeout": timeout}
        resp = requests.post(server.endpoint + "/v1/allocations", json=body,
                             headers=HEADERS, timeout=60)
        self.case.assertEqual(201, resp.status_code, resp.text)
        result: dict[str, Any] = resp.json()
        return result

    def _get(self, server: ServerProcess, ident: str) -> dict[str, Any]:
        resp = requests.get(f"{server.endpoint}/v1/allocations/{ident}",
                            headers=HEADERS, timeout=60)
        self.case.assertEqual(200, resp.status_code, resp.text)
        result: dict[str, Any] = resp.json()
        return result

    def _delete(self, server: ServerProcess, ident: str) -> None:
        resp = requests.delete(f"{server.endpoint}/v1/allocations/{ident}",
                               headers=HEADERS, timeout=60)
        self.case.assertEqual(204, resp.status_code, resp.text)

    def _active(self, server: ServerProcess, ident: str) -> dict[str, Any]:
        deadline = time.monotonic() + SETTLE
        while True:
            found = self._get(server, ident)
            if found["state"] != "allocating":
                self.case.assertEqual("active", found["state"], found)
                return found
            if time.monotonic() > deadline:
                self.fail_(f"{ident} still waiting after {SETTLE} s")
            time.sleep(0.1)

    def fail_(self, message: str) -> None:
        raise AssertionError(message)

    def _hold_both_nodes(self, server: ServerProcess) -> list[str]:
        held = [self._create(server, queue=False)["uuid"] for _ in range(2)]
        return [self._active(server, u)["uuid"] for u in held]

    def test_ten_waiting_on_two_nodes_become_active_in_arrival_order(
        self,
    ) -> None:
        servers = [self._start("a"), self._start("b")]
        holders = self._hold_both_nodes(servers[0])
        line = []
        for index in range(10):
            made = self._create(servers[index % 2], queue=True)
            self.case.assertEqual("allocating", made["state"])
            self.case.assertEqual(index + 1, made["queue"]["position"])
            line.append(made["uuid"])
        time.sleep(0.5)  # a few queue rounds: nobody may jump the line
        self.case.assertEqual(
            ["allocating"] * 10,
            [self._get(servers[1], u)["state"] for u in line])
        holding = list(holders)
        became_active = []
        for step in range(10):
            # Release the oldest holder through the process that does
            # *not* own the next in line: its own waiting allocations try
            # at once (a release wakes them), the owner's a round later.
            self._delete(servers[(step + 1) % 2], holding.pop(0))
            nxt = line[step]
            self._active(servers[step % 2], nxt)
            became_active.append(nxt)
            holding.append(nxt)
            for later in line[step + 1:]:
                self.case.assertEqual(
                    "allocating", self._get(servers[0], later)["state"])
        self.case.assertEqual(line, became_active)
        nodes = {self._get(servers[0], u)["node_uuid"] for u in holding}
        self.case.assertEqual(2, len(nodes))

    def test_deleted_waiting_allocation_leaves_the_line(self) -> None:
        server = self._start("solo")
        holders = self._hold_both_nodes(server)
        first, second = (self._create(server, queue=True)["uuid"]
                         for _ in range(2))
        self.case.assertEqual(2, self._get(server, second)["queue"][
            "position"])
        self._delete(server, first)
        self.case.assertEqual(1, self._get(server, second)["queue"][
            "position"])
        self._delete(server, holders[0])
        self._active(server, second)

    def test_queue_deadline_ends_in_error(self) -> None:
        server = self._start("solo")
        self._hold_both_nodes(server)
        made = self._create(server, queue=True, timeout=1)
        deadline = time.monotonic() + SETTLE
        while self._get(server, made["uuid"])["state"] == "allocating":
            self.case.assertLess(time.monotonic(), deadline)
            time.sleep(0.2)
        found = self._get(server, made["uuid"])
        self.case.assertEqual("error", found["state"])
        self.case.assertIn("before the queue deadline", found["last_error"])
        self.case.assertNotIn("queue", found)

    def test_takeover_keeps_waiting_allocations_in_line(self) -> None:
        victim = self._start("victim")
        survivor = self._start("survivor")
        holders = self._hold_both_nodes(survivor)
        line = [self._create(victim, queue=True)["uuid"] for _ in range(3)]
        _cluster.kill(victim)
        database = Database(self.db.url)
        self.case.addCleanup(database.dispose)
        deadline = time.monotonic() + SETTLE
        while True:  # heartbeat timeout 3 s, take-over every 1 s
            with database.read() as session:
                owners = set(session.scalars(
                    select(Allocation.conductor_affinity)
                    .where(Allocation.uuid.in_(line))))
            if owners == {f"{self.prefix}-survivor"}:
                break
            self.case.assertLess(time.monotonic(), deadline, owners)
            time.sleep(0.2)
        found = [self._get(survivor, u) for u in line]
        self.case.assertEqual(["allocating"] * 3,
                              [a["state"] for a in found])
        self.case.assertEqual([1, 2, 3],
                              [a["queue"]["position"] for a in found])
        self._delete(survivor, holders[0])
        self._active(survivor, line[0])
        self.case.assertEqual(
            ["allocating"] * 2,
            [self._get(survivor, u)["state"] for u in line[1:]])
        self.case.assertIn("Took over allocation", survivor.log())


class SQLiteQueueTests(_QueueTests, testtools.TestCase):
    """Two processes may share one SQLite file on one host too."""

    kind = "sqlite"


class PostgreSQLQueueTests(_QueueTests, testtools.TestCase):
    kind = "postgresql"


class MySQLQueueTests(_QueueTests, testtools.TestCase):
    kind = "mysql"
