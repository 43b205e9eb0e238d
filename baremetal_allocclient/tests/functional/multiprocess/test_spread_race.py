"""Groups spread over racks, racing, on every database.

20 clients ask at once for groups of 3 spread over the ``rack``
property, at most one member per rack, on 4 racks of 8 nodes, through
three server processes sharing the database.  No group ever has two
members in one rack, no node is held twice, each group's answer says
its members per rack, and every refusal says which racks ran short and
was right: when any group was refused, the nodes left free span fewer
than 3 racks (nothing was released meanwhile).
"""

from __future__ import annotations

import collections
import concurrent.futures
import uuid as uuidlib
from typing import Any, ClassVar

import requests
import testtools

from baremetal_allocclient import groups
from baremetal_allocclient.tests.fixtures import databases, launcher
from baremetal_allocclient.tests.fixtures.launcher import ServerProcess
from baremetal_allocclient.tests.functional.faults import _invariants
from baremetal_allocclient.tests.functional.multiprocess import _cluster

RACKS = 4
PER_RACK = 8
GROUPS = 20
SIZE = 3
SPREAD = {"over": "property:rack", "max_per_domain": 1}
_HEADERS = {"X-OpenStack-Ironic-API-Version": "latest",
            "X-Baremetal-Alloc-Extensions": groups.EXTENSION}


class _SpreadRace:
    """Mixin: ``kind`` is set by the concrete classes."""

    kind: ClassVar[str]
    db: ClassVar[databases.ScratchDatabase]
    servers: ClassVar[list[ServerProcess]]
    rc: ClassVar[str]
    rack_of: ClassVar[dict[str, str]]  # node name -> rack

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        cleanup = cls.addClassCleanup  # type: ignore[attr-defined]
        cls.db, workdir = _cluster.scratch(cleanup, cls.kind)
        cls.rc = "rc-" + uuidlib.uuid4().hex[:12]
        cls.rack_of = {f"{cls.rc}-{i}": f"r{i % RACKS}"
                       for i in range(RACKS * PER_RACK)}
        launcher.enroll(cls.db.url, workdir, {
            name: {"driver": "fake-hardware", "resource_class": cls.rc,
                   "properties": {"rack": rack, "cpus": 8}}
            for name, rack in cls.rack_of.items()})
        cls.servers = []
        for i in range(3):
            server = _cluster.start(cls.db.url, f"spread-{i}")
            cleanup(server.cleanup)
            cls.servers.append(server)

    def _post(self, index: int) -> tuple[int, Any]:
        server = self.servers[index % len(self.servers)]
        resp = requests.post(
            server.endpoint + groups.PATH,
            json={"count": SIZE, "resource_class": self.rc,
                  "name": f"s{index}", "spread": SPREAD},
            headers=_HEADERS, timeout=120)
        return resp.status_code, resp.json()

    def test_racing_spread_groups(self) -> None:
        case: Any = self
        with concurrent.futures.ThreadPoolExecutor(GROUPS) as pool:
            answers = list(pool.map(self._post, range(GROUPS)))
        made = [body for status, body in answers if status == 201]
        refused = [body for status, body in answers if status == 409]
        case.assertEqual(GROUPS, len(made) + len(refused), answers)
        # 32 nodes, 3 a group: at most 10 groups.
        case.assertTrue(1 <= len(made) <= 10, len(made))
        nodes = {n["uuid"]: n["name"]
                 for n in _cluster.nodes(self.servers[0], self.rc)}
        for body in made:
            racks = [self.rack_of[nodes[a["node_uuid"]]]
                     for a in body["allocations"]]
            case.assertEqual(SIZE, len(set(racks)), body)
            case.assertEqual(dict(collections.Counter(racks)),
                             body["spread"]["members_per_domain"])
        for body in refused:
            message = body["error_message"]
            case.assertIn("not reserved (nothing was created)", message)
            case.assertIn("spread over rack cannot place 3 members, at "
                          "most 1 per rack", message)
            case.assertIn("ran short: ", message)
        reader = _invariants.DatabaseReader(self.db.url)
        self.addCleanup(reader.dispose)  # type: ignore[attr-defined]
        snapshot = reader.snapshot(self.rc)
        case.assertEqual([], _invariants.violations(snapshot))
        stored = list(snapshot.allocations.values())
        case.assertEqual(len(made) * SIZE, len(stored))
        held = [a.node_id for a in stored]
        case.assertEqual(len(held), len(set(held)))
        if refused:
            free = [n for n in _cluster.nodes(self.servers[0], self.rc)
                    if not n.get("allocation_uuid")]
            case.assertLess(len({self.rack_of[n["name"]] for n in free}),
                            SIZE, "a group was refused that would fit")


class SQLiteSpreadRace(_SpreadRace, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLSpreadRace(_SpreadRace, testtools.TestCase):
    kind = "postgresql"


class MariaDBSpreadRace(_SpreadRace, testtools.TestCase):
    kind = "mysql"
