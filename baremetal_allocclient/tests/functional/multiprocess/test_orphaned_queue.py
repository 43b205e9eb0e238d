"""A killed process's many allocations waiting in line (issue 20 a).

Waiting allocations hold no worker slot and only their owner's queue
rounds fail them at their deadline, so a survivor must take all of them
over in one round, not as many as it has free worker slots: 100 waiting
allocations of a SIGKILLed process are failed within their deadlines
plus one round, and the others are served when nodes come free.
"""

from __future__ import annotations

import datetime
import sys
import time

import requests
import testtools
from sqlalchemy import select

from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Allocation, utcnow
from baremetal_allocclient.tests.functional.multiprocess import _cluster

HEADERS = {"X-OpenStack-Ironic-API-Version": "latest",
           "X-Baremetal-Alloc-Extensions": "queue"}
HEARTBEAT_TIMEOUT = 3.0
TAKEOVER_INTERVAL = 1.0
QUEUE_INTERVAL = 0.2
NODES = 10
WAITING = 100
#: Half the line asks for this long in line, the rest for 10 minutes.
SHORT = 8.0
#: Room for a loaded shared machine (rounds, polling, commits).
SLACK = 3.0


class _OrphanedQueueTests(_cluster.ClusterCase):
    def test_every_waiting_orphan_settles_by_its_deadline(self) -> None:
        _cluster.enroll(self.db.url, self.workdir, NODES, self.rc)
        fast = (*_cluster.FAST, "--queue-interval", str(QUEUE_INTERVAL))
        victim = _cluster.start(self.db.url, f"{self.prefix}-victim", *fast)
        self.case.addCleanup(victim.cleanup)
        survivor = _cluster.start(self.db.url, f"{self.prefix}-survivor",
                                  *fast, "--workers", "4", "--pending", "0")
        self.case.addCleanup(survivor.cleanup)
        holders = [self._create(victim, None) for _ in range(NODES)]
        for uuid in holders:
            self.case.assertEqual("active", victim.wait_allocation(uuid)[
                "state"])
        short = [self._create(victim, SHORT) for _ in range(WAITING // 2)]
        long = [self._create(victim, 600) for _ in range(WAITING // 2)]
        _cluster.kill(victim)
        killed = time.monotonic()
        database = Database(self.db.url)
        self.case.addCleanup(database.dispose)
        # The short ones: failed by their deadline plus one round.
        latest = max(self._rows(database, short).values(),
                     key=lambda r: r[1])[1]
        wait = (latest - utcnow()).total_seconds()
        time.sleep(max(wait, 0) + TAKEOVER_INTERVAL + SLACK)
        rows = self._rows(database, short)
        allowed = datetime.timedelta(
            seconds=TAKEOVER_INTERVAL + QUEUE_INTERVAL + SLACK)
        late = {u: state for u, (state, deadline, updated) in rows.items()
                if state != "error" or updated - deadline > allowed}
        rounds = [line[:23] for line in survivor.log().splitlines()
                  if "Took over" in line]
        print(f"\n{self.kind}: {WAITING} waiting allocations of a killed "
              f"process; {len(late)} short ones late or unsettled "
              f"{time.monotonic() - killed:.1f} s after the kill; "
              f"take-over log lines {len(rounds)}, first {rounds[:1]}, "
              f"last {rounds[-1:]}", file=sys.stderr)
        self.case.assertEqual({}, late)
        # The long ones: served in arrival order as nodes come free.
        for uuid in holders:
            resp = requests.delete(
                f"{survivor.endpoint}/v1/allocations/{uuid}",
                headers=HEADERS, timeout=60)
            self.case.assertEqual(204, resp.status_code, resp.text)
        deadline = time.monotonic() + 20
        while True:
            states = {u: s for u, (s, _d, _t) in
                      self._rows(database, long).items()}
            served = [u for u in long if states[u] == "active"]
            if len(served) == NODES or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        self.case.assertEqual(long[:NODES], served)

    def _create(self, server: _cluster.ServerProcess,
                queue: float | None) -> str:
        body: dict[str, object] = {"resource_class": self.rc}
        if queue is not None:
            body["queue"] = {"timeout": queue}
        resp = requests.post(server.endpoint + "/v1/allocations", json=body,
                             headers=HEADERS, timeout=60)
        self.case.assertEqual(201, resp.status_code, resp.text)
        return str(resp.json()["uuid"])

    @staticmethod
    def _rows(database: Database, uuids: list[str]
              ) -> dict[str, tuple[str, datetime.datetime,
                                   datetime.datetime]]:
        with database.read() as session:
            rows = session.execute(
                select(Allocation.uuid, Allocation.state,
                       Allocation.queue_deadline, Allocation.updated_at)
                .where(Allocation.uuid.in_(uuids))).all()
        return {str(r[0]): (str(r[1]), r[2], r[3]) for r in rows}


class SQLiteOrphanedQueueTests(_OrphanedQueueTests, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLOrphanedQueueTests(_OrphanedQueueTests, testtools.TestCase):
    kind = "postgresql"


class MySQLOrphanedQueueTests(_OrphanedQueueTests, testtools.TestCase):
    kind = "mysql"
