"""The values a statement on the driver's cursor binds are what
SQLAlchemy binds: SQLite's timestamps are the same text."""

from __future__ import annotations

import datetime
import uuid

import testtools
from sqlalchemy import DateTime, text
from sqlalchemy.dialects import sqlite

from baremetal_allocclient.server.allocation import reservation
from baremetal_allocclient.server.db.allocation_row import AllocationRow
from baremetal_allocclient.server.db.driver_statements import bind_conversion
from baremetal_allocclient.tests.unit.server._sqlite import SQLiteDatabase

_DIALECT = sqlite.dialect()
_SQLALCHEMY = DateTime().dialect_impl(_DIALECT).bind_processor(_DIALECT)
_OURS = bind_conversion(DateTime(), _DIALECT)


class SQLiteTimestampTests(testtools.TestCase):

    def test_bound_by_sqlalchemys_own_conversion(self) -> None:
        value = datetime.datetime(2026, 1, 2, 3, 4, 5, 120000)
        assert _OURS is not None
        self.assertEqual(_SQLALCHEMY(value), _OURS(value))

    def test_what_a_create_stores(self) -> None:
        db = self.useFixture(SQLiteDatabase()).db
        created = datetime.datetime(2026, 1, 2, 3, 4, 5)
        with db.write_connection() as conn:
            reservation.insert_allocation(conn, AllocationRow(
                uuid=str(uuid.uuid4()), name=None, state="allocating",
                resource_class="rc", created_at=created))
        with db.read_connection() as conn:
            stored = conn.execute(text(
                "SELECT created_at FROM allocations")).scalar_one()
        self.assertEqual("2026-01-02 03:04:05.000000", stored)
