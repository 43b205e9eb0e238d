"""The waiting line's reads cost what the line holds, not what the
resource class ever held.

Every reservation asks whether an earlier allocation waits in line
(``queries.ANYONE_WAITING_BEFORE``, a column of its lock) and, when one
does, whether one matches its node (``queries.waiting_before``); a create
that opted into the queue extension asks for its place in line
(``queries.queue_position``), and a group reservation reads the whole
line (``queries.in_line``).  With thousands of settled allocations in the
class and two waiting, each of these must read about as many rows as
with none settled: the rows the database itself reports reading
(SQLite: the virtual machine's steps; PostgreSQL:
``pg_stat_xact_user_tables``; MariaDB: the session's ``Handler_read_*``
counters), once the driver prepared the statement.
PostgreSQL's and MariaDB's statistics are brought up to date first, as
autovacuum and InnoDB keep them on a running database; SQLite has none,
as the server never runs ``ANALYZE``.
"""

from __future__ import annotations

import datetime
import uuid as uuidlib
from typing import Any

import testtools
from sqlalchemy import insert, select

from baremetal_allocclient.server.allocation import reservation
from baremetal_allocclient.server.allocation.line import queries
from baremetal_allocclient.server.allocation.states import ACTIVE, ALLOCATING
from baremetal_allocclient.server.db.driver_statements import driver_statement
from baremetal_allocclient.server.db.models import Allocation, Node, utcnow
from baremetal_allocclient.tests.fixtures import databases
from baremetal_allocclient.tests.functional.multiprocess import _reads

RC = "line-class"
SETTLED = 3000
#: Reads allowed beyond those with no settled allocation (SQLite counts
#: virtual-machine steps in tens, see ``_Reads``): far below one read
#: per settled allocation.
SLACK = 50


def _row(index: int, state: str, deadline: datetime.datetime | None,
         owner: str) -> dict[str, Any]:
    return {"uuid": f"00000000-0000-4000-8000-{index:012d}",
            "state": state, "resource_class": RC, "traits": [],
            "candidate_nodes": [], "extra": {}, "owner": owner,
            "conductor_affinity": "line-test", "queue_deadline": deadline,
            "created_at": utcnow()}


class _LineReads(databases.MigratedPerClass):
    def _store(self, first: int, count: int, state: str,
               deadline: datetime.datetime | None = None) -> list[int]:
        rows = [_row(first + index, state, deadline, "p1")
                for index in range(count)]
        with self.db.write() as session:
            for row in rows:
                session.execute(insert(Allocation).values(**row))
        with self.db.read() as session:
            return list(session.scalars(
                Allocation.__table__.select()
                .with_only_columns(Allocation.id)
                .where(Allocation.uuid.in_([r["uuid"] for r in rows]))))

    def _reads(self, waiting_ids: list[int]) -> dict[str, int]:
        now = utcnow()
        last = max(waiting_ids)
        with self.db.read() as session:
            conn = session.connection()
            reads = _reads.Reads(self.kind, conn)
            allocation = Allocation(id=last, resource_class=RC,
                                    queue_deadline=now, state=ALLOCATING)
            return {
                "anyone waiting before": reads.of(lambda: conn.execute(
                    select(queries.ANYONE_WAITING_BEFORE),
                    {"q_rc": RC, "q_now": now, "q_before": last + 1}
                ).scalar()),
                "waiting_before": reads.of(lambda: queries.waiting_before(
                    conn, last + 1, 1, RC, now)),
                "queue_position": reads.of(lambda: queries.queue_position(
                    session, allocation, now)),
                "queue_position among a project": reads.of(
                    lambda: queries.queue_position(session, allocation, now,
                                               "p1")),
                "in_line": reads.of(lambda: queries.in_line(session, RC, now)),
            }

    def test_line_reads_do_not_grow_with_settled_allocations(self) -> None:
        test: Any = self
        deadline = utcnow() + datetime.timedelta(hours=1)
        self._store(0, 20, ACTIVE)
        waiting = self._store(100, 2, ALLOCATING, deadline)
        _reads.analyze(self.db, self.kind)
        few = self._reads(waiting)
        self._store(1000, SETTLED, ACTIVE)
        waiting += self._store(10_000, 2, ALLOCATING, deadline)
        _reads.analyze(self.db, self.kind)
        # Same line length compared: the two newest waiting ones.
        many = self._reads(waiting)
        for name, before in few.items():
            test.assertLessEqual(
                many[name], before * 2 + SLACK,
                f"{name}: {before} reads with 20 settled allocations, "
                f"{many[name]} with {SETTLED + 20}")


    def test_the_reservation_lock_reads_the_line_without_locking_it(
            self) -> None:
        """A reservation locks its node, then its own allocation (the
        one lock order): the waiting allocations it looks at stay free
        for their own workers."""
        test: Any = self
        if self.kind == "sqlite":
            test.skipTest("no row locks on SQLite")
        deadline = utcnow() + datetime.timedelta(hours=1)
        (waiting,) = self._store(20_000, 1, ALLOCATING, deadline)
        with self.db.write() as session:
            node = Node(uuid=str(uuidlib.uuid4()), driver="fake-hardware",
                        resource_class=RC, provision_state="available",
                        power_state="power off", maintenance=False)
            session.add(node)
            session.flush()
            node_id = node.id
        with self.db.write_connection() as conn:
            locked = driver_statement(reservation._LOCK_CANDIDATE,
                                      conn.dialect).first(conn, {
                "r_node": node_id, "q_rc": RC, "q_now": utcnow(),
                "q_before": waiting + 1})
            test.assertTrue(locked.anyone_waiting_before)
            with self.db.engine.connect() as other, other.begin():
                ids = other.scalars(  # every allocation waiting in line
                    select(Allocation.id).where(
                        Allocation.state == ALLOCATING,
                        Allocation.resource_class == RC)
                    .with_for_update(nowait=True)).all()
            test.assertIn(waiting, ids)


class SQLiteLineReads(_LineReads, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLLineReads(_LineReads, testtools.TestCase):
    kind = "postgresql"


class MySQLLineReads(_LineReads, testtools.TestCase):
    kind = "mysql"
