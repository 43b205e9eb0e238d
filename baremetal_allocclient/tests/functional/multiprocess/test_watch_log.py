"""The change log of the watch extension on each database: the triggers
record every change in its own transaction, cursors are handed out in
commit order (a transaction that inserted first but commits last is not
missed by a reader already past the other), retention.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import testtools
from sqlalchemy import delete, update

from baremetal_allocclient.server.allocation.watch import log
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import (
    Allocation,
    AllocationChange,
    Node,
    utcnow,
)
from baremetal_allocclient.tests.fixtures import databases


def _allocation(name: str | None = None, owner: str | None = None
                ) -> Allocation:
    return Allocation(uuid=str(uuid.uuid4()), name=name, state="allocating",
                      resource_class="rc", owner=owner)


class _LogTests(databases.MigratedPerClass):
    """Mixin; ``kind`` is set by the concrete classes."""

    db: Any

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        while log.pending(self.db):
            log.sequence(self.db)
        self.start = log.position(self.db).last

    def _drain(self) -> list[AllocationChange]:
        while log.pending(self.db):
            log.sequence(self.db)
        return log.read(self.db, self.start, limit=10_000)

    def test_every_change_is_recorded_once_in_order(self) -> None:
        case: Any = self
        node_uuid = str(uuid.uuid4())
        with self.db.write() as session:
            node = Node(uuid=node_uuid, name="n-" + node_uuid[:8],
                        driver="fake-hardware", provision_state="available")
            session.add(node)
            allocation = _allocation("w-" + node_uuid[:8], "p1")
            session.add(allocation)
            session.flush()
            node_id, ident = node.id, allocation.id
        with self.db.write() as session:
            session.execute(update(Allocation).where(Allocation.id == ident)
                            .values(state="active", node_id=node_id))
        with self.db.write() as session:  # bookkeeping only: no change
            session.execute(update(Allocation).where(Allocation.id == ident)
                            .values(conductor_affinity="elsewhere",
                                    updated_at=utcnow()))
        with self.db.write() as session:
            session.execute(update(Allocation).where(Allocation.id == ident)
                            .values(extra={"a": 1}))
        with self.db.write() as session:
            session.execute(delete(Allocation).where(Allocation.id == ident))
        rows = self._drain()
        case.assertEqual(
            [("created", "allocating", None, {}),
             ("updated", "active", node_uuid, {}),
             ("updated", "active", node_uuid, {"a": 1}),
             ("deleted", "active", node_uuid, {"a": 1})],
            [(r.op, r.state, r.node_uuid, r.extra) for r in rows])
        cursors = [r.seq for r in rows]
        case.assertEqual(list(range(self.start + 1, self.start + 5)),
                         cursors)
        case.assertEqual({"p1"}, {r.owner for r in rows})
        case.assertEqual(self.start + 4, log.position(self.db).last)

    def test_retention_forgets_old_changes_and_says_so(self) -> None:
        case: Any = self
        with self.db.write() as session:
            session.add(_allocation())
        self._drain()
        highest = log.prune(self.db, 60.0, now=utcnow()
                            + datetime.timedelta(seconds=61))
        case.assertGreaterEqual(highest, self.start + 1)
        case.assertEqual(highest, log.position(self.db).pruned_through)
        case.assertEqual([], log.read(self.db, 0, upto=highest))


class _ConcurrentLogTests(_LogTests):
    """Databases where two writers run at once."""

    def test_a_late_commit_gets_a_later_cursor(self) -> None:
        """The transaction that inserted first (lower id) commits last:
        its change is sequenced after the other's, so a reader that had
        read past the other's cursor still finds it."""
        case: Any = self
        late_db = Database(self.db.url)
        self.addCleanup(late_db.dispose)  # type: ignore[attr-defined]
        late = late_db.write()
        session = late.__enter__()
        try:
            first = _allocation()
            session.add(first)
            session.flush()  # the trigger's row exists, uncommitted
            with self.db.write() as other:
                second = _allocation()
                other.add(second)
            case.assertEqual(1, log.sequence(self.db))
            seen = log.read(self.db, self.start)
            case.assertEqual([second.uuid], [r.uuid for r in seen])
            reader_cursor = seen[-1].seq
        finally:
            late.__exit__(None, None, None)
        case.assertEqual(1, log.sequence(self.db))
        after = log.read(self.db, reader_cursor)
        case.assertEqual([first.uuid], [r.uuid for r in after])
        ids = {r.uuid: r.id for r in self._drain()}
        case.assertLess(ids[first.uuid], ids[second.uuid])


class SQLiteLogTests(_LogTests, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLLogTests(_ConcurrentLogTests, testtools.TestCase):
    kind = "postgresql"


class MySQLLogTests(_ConcurrentLogTests, testtools.TestCase):
    kind = "mysql"
