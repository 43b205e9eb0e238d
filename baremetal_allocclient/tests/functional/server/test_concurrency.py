"""Many clients allocating at once on SQLite: no lock errors, all settle."""

from __future__ import annotations

import concurrent.futures
import time
import uuid as uuidlib
from typing import Any

import requests
import testtools

from baremetal_allocclient.tests.fixtures import databases
from baremetal_allocclient.tests.fixtures.inprocess import InProcessServer
from baremetal_allocclient.tests.fixtures.launcher import (
    ServerProcess,
)

NODES = 20
CLIENTS = 30
_HEADERS = {"X-OpenStack-Ironic-API-Version": "latest"}


class ConcurrencyTests(testtools.TestCase):
    """Ironic 39 on SQLite leaves allocations ``allocating`` here."""

    def setUp(self) -> None:
        super().setUp()
        self.server = InProcessServer()
        self.addCleanup(self.server.cleanup)
        self.server.start(inventory={
            f"conc-{i}": {"driver": "fake-hardware",
                          "resource_class": "rc-conc",
                          "traits": ["CUSTOM_FAST"]}
            for i in range(NODES)
        })

    def _one_client(self, _index: int) -> dict[str, Any]:
        session = requests.Session()
        url = self.server.endpoint + "/v1/allocations"
        resp = session.post(url, json={"resource_class": "rc-conc",
                                       "traits": ["CUSTOM_FAST"]},
                            headers=_HEADERS, timeout=60)
        if resp.status_code != 201:
            return {"state": f"http {resp.status_code}", "text": resp.text}
        uuid = resp.json()["uuid"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            resp = session.get(f"{url}/{uuid}", headers=_HEADERS, timeout=60)
            if resp.status_code != 200:
                return {"state": f"http {resp.status_code}",
                        "text": resp.text}
            body: dict[str, Any] = resp.json()
            if body["state"] != "allocating":
                return body
            time.sleep(0.05)
        return {"state": "stuck", "uuid": uuid}

    def test_every_allocation_settles_without_double_booking(self) -> None:
        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            results = list(pool.map(self._one_client, range(CLIENTS)))
        states = [r["state"] for r in results]
        self.assertEqual(NODES, states.count("active"), str(results))
        self.assertEqual(CLIENTS - NODES, states.count("error"),
                         str(results))
        reserved = [r["node_uuid"] for r in results if r["state"] == "active"]
        self.assertEqual(len(reserved), len(set(reserved)))
        for r in results:
            if r["state"] == "error":
                self.assertIn("no available nodes match the resource class",
                              r["last_error"])
        log = self.server.log()
        self.assertNotIn("database is locked", log)
        self.assertNotIn("Traceback", log)
        nodes = self.server.request(
            "GET", "/v1/nodes/detail?resource_class=rc-conc").json()["nodes"]
        self.assertEqual(
            sorted(reserved),
            sorted(n["uuid"] for n in nodes if n["allocation_uuid"]),
        )
        for node in nodes:
            self.assertEqual(node["allocation_uuid"], node["instance_uuid"])


class _MultiProcessTests(databases.ScratchPerClass):
    """Two server processes on one database never book a node twice.

    The database URLs come from the variables CI sets (see
    :mod:`baremetal_allocclient.tests.fixtures.databases`);
    each class creates a database of its own there and drops it after.
    """

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        case: Any = self
        self.servers = []
        for name in ("proc-a", "proc-b"):
            server = ServerProcess(self.scratch.url)
            case.addCleanup(server.cleanup)
            server.upgrade()
            # Within its share of the database's connection limit, which
            # test classes on the other stestr worker use at the same time.
            server.start("--conductor-name", name, "--db-connections", "8")
            self.servers.append(server)
        self.rc = "rc-multi-" + uuidlib.uuid4().hex[:12]
        self.servers[0].make_nodes(NODES, self.rc)

    def _client(self, index: int) -> dict[str, Any]:
        server = self.servers[index % 2]
        for _attempt in range(20):
            resp = server.request("POST", "/v1/allocations",
                                  {"resource_class": self.rc})
            if resp.status_code != 503:  # 503 stored nothing: try again
                break
            time.sleep(0.2)
        if resp.status_code != 201:
            return {"state": f"http {resp.status_code}", "text": resp.text}
        body: dict[str, Any] = server.wait_allocation(resp.json()["uuid"],
                                                      timeout=60)
        return body

    def _warnings(self) -> str:
        """What the servers logged above INFO (for a failure's message)."""
        return "\n".join(
            line for server in self.servers
            for line in server.log().splitlines()
            if " INFO " not in line)

    def test_no_double_booking_across_processes(self) -> None:
        case: Any = self
        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            results = list(pool.map(self._client, range(CLIENTS)))
        states = [r["state"] for r in results]
        why = f"{results}\n{self._warnings()}"
        case.assertEqual(NODES, states.count("active"), why)
        case.assertEqual(CLIENTS - NODES, states.count("error"), why)
        reserved = [r["node_uuid"] for r in results if r["state"] == "active"]
        case.assertEqual(len(reserved), len(set(reserved)))
        for server in self.servers:
            case.assertNotIn("Traceback", server.log())


class PostgreSQLMultiProcessTests(_MultiProcessTests, testtools.TestCase):
    kind = "postgresql"


class MySQLMultiProcessTests(_MultiProcessTests, testtools.TestCase):
    kind = "mysql"
