"""The record a create builds has the allocations table's columns."""

from __future__ import annotations

import dataclasses

import testtools

from baremetal_allocclient.server.db.allocation_row import AllocationRow
from baremetal_allocclient.server.db.models import Allocation


class AllocationRowTests(testtools.TestCase):

    def test_fields_are_the_table_columns(self) -> None:
        self.assertEqual(
            sorted(column.key for column in Allocation.__table__.columns),
            sorted(field.name for field in dataclasses.fields(AllocationRow)))
