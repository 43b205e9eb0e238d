"""Two processes started at once with one ``--conductor-name``: one runs.

Registration is a compare-and-set: it takes the name only while nobody
live holds it.  Before, each process read the ``conductors`` row, saw
the name free and then wrote it, so two processes starting together
both registered and both ran under one name (both would resume and
claim the same allocations).

The overlap is forced, not hoped for: the name's row belongs to a
gracefully stopped predecessor (offline, so free) and the test holds a
lock on it while both processes start, so both have read it and wait
to write it; then the lock is released.
"""

from __future__ import annotations

import concurrent.futures
import time
import uuid

import testtools
from sqlalchemy import create_engine, text

from baremetal_allocclient.tests.fixtures import databases
from baremetal_allocclient.tests.fixtures.launcher import (
    ServerProcess,
)
from baremetal_allocclient.tests.functional.multiprocess import _cluster

REFUSAL = "another live process is registered as conductor"


class SimultaneousStartTests(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        db = databases.scratch(self.addCleanup, "postgresql", schema=True)
        self.url = db.url
        self.database = db.name
        self.engine = create_engine(db.url)
        self.addCleanup(self.engine.dispose)

    def _waiting_on_locks(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(text(
                "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = :db "
                "AND wait_event_type = 'Lock'"), {"db": self.database},
            ).scalar_one())

    def _start(self, server: ServerProcess) -> str:
        try:
            server.start("--conductor-name", self.name, *_cluster.FAST,
                         *_cluster.DB_CONNECTIONS, timeout=60)
        except RuntimeError:
            return "refused"
        return "serving"

    def test_only_one_of_two_simultaneous_starts_runs(self) -> None:
        self.name = "twin-" + uuid.uuid4().hex[:6]
        servers = [ServerProcess(self.url) for _ in range(2)]
        for server in servers:
            self.addCleanup(server.cleanup)
        with self.engine.connect() as holder:
            holder.execute(text(
                "INSERT INTO conductors (hostname, online, heartbeat_at, "
                "created_at) VALUES (:name, false, "
                "now() - interval '1 hour', now())"), {"name": self.name})
            holder.commit()
            holder.execute(text(
                "SELECT id FROM conductors WHERE hostname = :name "
                "FOR UPDATE"), {"name": self.name})
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                started = [pool.submit(self._start, s) for s in servers]
                deadline = time.monotonic() + 60
                while self._waiting_on_locks() < 2:
                    self.assertLess(time.monotonic(), deadline,
                                    "the processes never reached the row")
                    self.assertFalse(any(f.done() for f in started))
                    time.sleep(0.05)
                holder.commit()  # both go on at once
                outcomes = [f.result() for f in started]
        self.assertEqual(["refused", "serving"], sorted(outcomes))
        refused = servers[outcomes.index("refused")]
        self.assertIn(REFUSAL, refused.log())
        assert refused.proc is not None
        self.assertEqual(1, refused.proc.returncode)
