"""Migrations and the per-database code paths on each database.

The schema must come out identical to the models on SQLite, PostgreSQL
and MariaDB (utf8mb4), and the dialect-specific pieces (the database
clock, the take-over compare-and-set, row locks) must work on each.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any, ClassVar

import testtools
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import select

from baremetal_allocclient.server.db import conductors
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import (
    Allocation,
    Base,
    Node,
    utcnow,
)
from baremetal_allocclient.tests.functional.multiprocess import _databases


class _MigrationTests:
    """Mixin; ``kind`` is set by the concrete classes."""

    kind: ClassVar[str]
    scratch: ClassVar[_databases.ScratchDatabase]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        cls.scratch = _databases.ScratchDatabase(cls.kind)
        cls.addClassCleanup(cls.scratch.drop)  # type: ignore[attr-defined]

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        case: Any = self
        self.db = Database(self.scratch.url)
        case.addCleanup(self.db.dispose)
        self.db.upgrade()

    def test_schema_matches_models_and_upgrade_is_idempotent(self) -> None:
        case: Any = self
        self.db.upgrade()
        current, head = self.db.schema_revisions()
        case.assertEqual(head, current)
        case.assertEqual("0002_conductors", head)
        with self.db.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn),
                                    Base.metadata)
        case.assertEqual([], diff)

    def test_four_byte_characters_are_stored(self) -> None:
        case: Any = self
        text = "\U0001f600 caf\u00e9"
        node_uuid = str(uuid.uuid4())
        with self.db.write() as session:
            session.add(Node(
                uuid=node_uuid, name="n-" + uuid.uuid4().hex[:8],
                driver="fake-hardware", provision_state="enroll",
                description=text, maintenance_reason=text,
                extra={"note": text}, created_at=utcnow(),
            ))
        with self.db.read() as session:
            row = session.execute(
                select(Node.description, Node.maintenance_reason, Node.extra)
                .where(Node.uuid == node_uuid)
            ).one()
        case.assertEqual((text, text, {"note": text}), tuple(row))

    def test_database_clock_is_utc(self) -> None:
        case: Any = self
        with self.db.read() as session:
            now = conductors.database_now(session)
        case.assertIsNone(now.tzinfo)
        case.assertLess(abs((now - utcnow()).total_seconds()), 60)
        conductors.register(self.db, "clock-" + uuid.uuid4().hex[:6])
        rows, later = conductors.conductors_and_now(self.db)
        for row in rows:
            case.assertLessEqual(row.heartbeat_at,
                                 later + datetime.timedelta(seconds=1))

    def test_take_over_compare_and_set(self) -> None:
        case: Any = self
        dead = "dead-" + uuid.uuid4().hex[:6]
        with self.db.write() as session:
            row = Allocation(
                uuid=str(uuid.uuid4()), state="allocating",
                resource_class="rc", traits=[], candidate_nodes=[],
                extra={}, conductor_affinity=dead, created_at=utcnow(),
            )
            session.add(row)
            session.flush()
            allocation_id = row.id
        case.assertTrue(conductors.take_over(self.db, allocation_id, dead,
                                             "winner"))
        case.assertFalse(conductors.take_over(self.db, allocation_id, dead,
                                              "loser"))
        with self.db.read() as session:
            case.assertEqual("winner", session.scalar(
                select(Allocation.conductor_affinity)
                .where(Allocation.id == allocation_id)))


class SQLiteMigrationTests(_MigrationTests, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLMigrationTests(_MigrationTests, testtools.TestCase):
    kind = "postgresql"


class MySQLMigrationTests(_MigrationTests, testtools.TestCase):
    kind = "mysql"
