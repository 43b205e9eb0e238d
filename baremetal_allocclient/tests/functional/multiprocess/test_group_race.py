"""Groups racing for the last nodes, on every database.

20 clients ask at once for groups of 5 on 48 nodes, through two server
processes sharing the database: exactly 9 groups are reserved (45
nodes), the other 11 are refused with nothing stored, no group is
partial and no node is held twice.  The stored rows are judged by the
fault suite's invariant checker, read straight from the database.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any, ClassVar

import requests
import testtools

from baremetal_allocclient import groups
from baremetal_allocclient.tests.fixtures import databases
from baremetal_allocclient.tests.fixtures.launcher import (
    ServerProcess,
)
from baremetal_allocclient.tests.functional.faults import _invariants
from baremetal_allocclient.tests.functional.multiprocess import _cluster

NODES = 48
GROUPS = 20
SIZE = 5
_HEADERS = {"X-OpenStack-Ironic-API-Version": "latest",
            "X-Baremetal-Alloc-Extensions": groups.EXTENSION}


class _GroupRace:
    """Mixin: ``kind`` is set by the concrete classes."""

    kind: ClassVar[str]
    db: ClassVar[databases.ScratchDatabase]
    servers: ClassVar[list[ServerProcess]]
    rc: ClassVar[str]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        cls.db, cls.rc = _cluster.fleet(
            cls.addClassCleanup, cls.kind, NODES)  # type: ignore[attr-defined]
        cls.servers = []
        for i in range(2):
            server = _cluster.start(cls.db.url, f"groups-{i}")
            cls.addClassCleanup(server.cleanup)  # type: ignore[attr-defined]
            cls.servers.append(server)

    def _post(self, index: int) -> tuple[int, Any]:
        server = self.servers[index % len(self.servers)]
        resp = requests.post(
            server.endpoint + groups.PATH,
            json={"count": SIZE, "resource_class": self.rc,
                  "name": f"g{index}"},
            headers=_HEADERS, timeout=120)
        return resp.status_code, resp.json()

    def test_racing_groups_end_whole_or_not_at_all(self) -> None:
        case: Any = self
        with concurrent.futures.ThreadPoolExecutor(GROUPS) as pool:
            answers = list(pool.map(self._post, range(GROUPS)))
        statuses = sorted(status for status, _body in answers)
        case.assertEqual([201] * 9 + [409] * 11, statuses, answers[:3])
        for status, body in answers:
            if status == 409:
                case.assertIn("not reserved (nothing was created)",
                              body["error_message"])
            else:
                case.assertEqual(["active"] * SIZE,
                                 [a["state"] for a in body["allocations"]])
        reader = _invariants.DatabaseReader(self.db.url)
        self.addCleanup(reader.dispose)  # type: ignore[attr-defined]
        snapshot = reader.snapshot(self.rc)
        case.assertEqual([], _invariants.violations(snapshot))
        stored = list(snapshot.allocations.values())
        case.assertEqual(9 * SIZE, len(stored))
        case.assertEqual(9, len({_invariants.group_name(a) for a in stored}))
        held = [a.node_id for a in stored]
        case.assertEqual(len(held), len(set(held)))


class SQLiteGroupRace(_GroupRace, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLGroupRace(_GroupRace, testtools.TestCase):
    kind = "postgresql"


class MariaDBGroupRace(_GroupRace, testtools.TestCase):
    kind = "mysql"
