"""A burst of 600 allocations for 500 nodes on every database.

Four processes share PostgreSQL or MariaDB, one process runs on SQLite.
Exactly 500 allocations must end ``active`` on 500 different nodes and
100 ``error`` with a clear reason; none may stay ``allocating``.
"""

from __future__ import annotations

import sys
import time
from typing import Any, ClassVar

import testtools

from baremetal_allocclient.tests.fixtures import databases
from baremetal_allocclient.tests.fixtures.launcher import (
    ServerProcess,
)
from baremetal_allocclient.tests.functional.multiprocess import _cluster

NODES = 500
REQUESTS = 600
THREADS = 48


class _BurstTests:
    """Mixin: ``kind`` and ``processes`` are set by the concrete classes."""

    kind: ClassVar[str]
    processes: ClassVar[int]
    db: ClassVar[databases.ScratchDatabase]
    servers: ClassVar[dict[str, ServerProcess]]
    rc: ClassVar[str]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        cls.db, cls.rc = _cluster.fleet(
            cls.addClassCleanup, cls.kind, NODES)  # type: ignore[attr-defined]
        cls.servers = {}
        for i in range(cls.processes):
            name = f"burst-{i}"
            server = _cluster.start(cls.db.url, name, *_cluster.FAST)
            cls.addClassCleanup(server.cleanup)  # type: ignore[attr-defined]
            cls.servers[name] = server

    def test_exactly_the_available_nodes_are_allocated(self) -> None:
        case: Any = self
        servers = list(self.servers.values())
        started = time.monotonic()
        posted = _cluster.post_many(
            servers, REQUESTS, {"resource_class": self.rc}, THREADS
        )
        statuses = [status for status, _body in posted]
        case.assertEqual([201] * REQUESTS, statuses, str(posted[:3]))
        final = _cluster.wait_settled(servers[0], self.rc, timeout=180)
        elapsed = time.monotonic() - started
        print(
            f"\n{self.kind}: {REQUESTS} allocations for {NODES} nodes on "
            f"{len(servers)} process(es) settled in {elapsed:.1f} s",
            file=sys.stderr,
        )
        case.assertEqual(REQUESTS, len(final))
        by_state: dict[str, list[dict[str, Any]]] = {}
        for alloc in final:
            by_state.setdefault(alloc["state"], []).append(alloc)
        case.assertEqual(
            {"active": NODES, "error": REQUESTS - NODES},
            {state: len(group) for state, group in by_state.items()},
        )
        for alloc in by_state["error"]:
            case.assertIn(
                "no available nodes match the resource class "
                + self.rc, alloc["last_error"],
            )
            case.assertIsNone(alloc["node_uuid"])
        active_nodes = [a["node_uuid"] for a in by_state["active"]]
        case.assertEqual(NODES, len(set(active_nodes)))

        # The node side agrees: one allocation per node, matching back.
        owner_of = {a["node_uuid"]: a["uuid"] for a in by_state["active"]}
        node_rows = _cluster.nodes(servers[0], self.rc)
        case.assertEqual(NODES, len(node_rows))
        for node in node_rows:
            case.assertEqual(owner_of[node["uuid"]], node["allocation_uuid"])
            case.assertEqual(node["allocation_uuid"], node["instance_uuid"])

        finished = _cluster.finished_in_logs(
            self.servers, [a["uuid"] for a in final])
        case.assertEqual(
            {a["uuid"] for a in final}, set(finished),
            "every allocation is finished exactly by one process",
        )
        case.assertEqual([], [u for u, who in finished.items()
                              if len(who) != 1])
        for server in servers:
            case.assertNotIn("Traceback", server.log())


class SQLiteBurstTests(_BurstTests, testtools.TestCase):
    """The embedded default: one process, one SQLite file."""

    kind = "sqlite"
    processes = 1


class PostgreSQLBurstTests(_BurstTests, testtools.TestCase):
    """Four processes sharing PostgreSQL."""

    kind = "postgresql"
    processes = 4


class MySQLBurstTests(_BurstTests, testtools.TestCase):
    """Four processes sharing MariaDB/MySQL."""

    kind = "mysql"
    processes = 4
