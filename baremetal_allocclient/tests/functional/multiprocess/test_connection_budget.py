"""``serve --db-connections`` caps what one process takes from the database.

Several processes share one database server whose connection limit
(PostgreSQL's ``max_connections`` is 100 by default) must hold for all of
them together.  A burst larger than the cap must queue inside the process
and succeed, never exceed the cap and never be refused.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import testtools
from sqlalchemy import create_engine, text

from baremetal_allocclient.tests.fixtures import databases
from baremetal_allocclient.tests.functional.multiprocess import _cluster

CAP = 3
NODES = 40
REQUESTS = 40
CLIENT_THREADS = 24

_COUNT_SQL = {
    "postgresql": "SELECT count(*) FROM pg_stat_activity WHERE datname = :db",
    "mysql": "SELECT count(*) FROM information_schema.processlist "
             "WHERE db = :db",
}


class _Sampler:
    """Counts the server's connections to ``db_name`` until stopped."""

    def __init__(self, kind: str, db_name: str) -> None:
        self._engine = create_engine(databases.server_url(kind))
        self._sql = text(_COUNT_SQL[kind])
        self._db_name = db_name
        self._stop = threading.Event()
        self.samples: list[int] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with self._engine.connect() as conn:
            while not self._stop.is_set():
                count = conn.execute(self._sql, {"db": self._db_name})
                self.samples.append(int(count.scalar_one()))
                conn.rollback()
                self._stop.wait(0.01)

    def __enter__(self) -> _Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._engine.dispose()


class _BudgetTests:
    kind: ClassVar[str]

    def test_a_burst_queues_within_the_cap_and_succeeds(self) -> None:
        case: Any = self
        db, rc = _cluster.fleet(case.addCleanup, self.kind, NODES)
        # --db-connections given last wins over the helper's default.
        server = _cluster.start(db.url, "budget", "--db-connections",
                                str(CAP), "--threads", "32")
        case.addCleanup(server.cleanup)

        with _Sampler(self.kind, db.name) as sampler:
            posted = _cluster.post_many([server], REQUESTS,
                                        {"resource_class": rc},
                                        CLIENT_THREADS)
            final = _cluster.wait_settled(server, rc, timeout=120)

        case.assertEqual([201] * REQUESTS, [s for s, _ in posted],
                         [b for s, b in posted if s != 201][:3])
        case.assertEqual({"active"}, {a["state"] for a in final})
        case.assertEqual(NODES, len({a["node_uuid"] for a in final}))
        case.assertGreater(len(sampler.samples), 0)
        case.assertLessEqual(max(sampler.samples), CAP, sampler.samples)
        case.assertNotIn("Traceback", server.log())


class PostgreSQLBudgetTests(_BudgetTests, testtools.TestCase):
    kind = "postgresql"


class MySQLBudgetTests(_BudgetTests, testtools.TestCase):
    kind = "mysql"
