"""The column registry and value presentation."""

from __future__ import annotations

import datetime
import json

import testtools

from baremetal_allocclient.osc.v1 import columns
from baremetal_allocclient.v1 import Allocation

WIRE = {
    "uuid": "u1",
    "name": "n1",
    "state": "active",
    "resource_class": "gpu",
    "traits": ["CUSTOM_A", "CUSTOM_B"],
    "candidate_nodes": [],
    "node_uuid": "node-1",
    "owner": None,
    "last_error": None,
    "extra": {"b": "2", "a": 1},
    "created_at": "2026-01-02T03:04:05+00:00",
    "updated_at": None,
    "links": [{"href": "http://x/v1/allocations/u1", "rel": "self"}],
}


class TestRegistry(testtools.TestCase):
    def test_columns_are_the_sdk_field_names(self) -> None:
        wire_names = {spec.wire for spec in Allocation.field_specs()}
        self.assertEqual(wire_names - {"links"} | {"lease_expires_at"},
                         set(columns.ALL))

    def test_ironicclient_columns_and_order(self) -> None:
        """python-ironicclient's ALLOCATION_(DETAILED_)RESOURCE fields."""
        self.assertEqual(("uuid", "name", "resource_class", "state",
                          "node_uuid"), columns.IRONICCLIENT_LIST)
        self.assertEqual(
            ("uuid", "name", "state", "owner", "node_uuid", "last_error",
             "resource_class", "traits", "candidate_nodes", "extra",
             "created_at", "updated_at"), columns.IRONICCLIENT_LONG)
        self.assertEqual(sorted(columns.IRONICCLIENT_LONG),
                         list(columns.IRONICCLIENT_RECORD))
        self.assertEqual("lease_expires_at", columns.ALL[-1])

    def test_lease_column_is_read_from_extra(self) -> None:
        self.assertEqual(["uuid", "extra"],
                         columns.fetched(["uuid", "lease_expires_at",
                                          "extra"]))
        self.assertIsNone(columns.fetched(None))
        self.assertNotIn("lease_expires_at", columns.SORTABLE)
        leased = Allocation.from_wire({"uuid": "u", "extra": {
            "baremetal_alloc:lease_expires_at": "2030-01-02T03:04:05Z"}})
        self.assertEqual(("u", "2030-01-02T03:04:05Z"), columns.row(
            leased, ["uuid", "lease_expires_at"]))
        plain = Allocation.from_wire({"uuid": "u", "extra": {}})
        self.assertEqual((None,), columns.row(plain, ["lease_expires_at"]))

    def test_default_and_sortable_are_subsets(self) -> None:
        self.assertTrue(set(columns.DEFAULT_LIST) <= set(columns.ALL))
        self.assertTrue(set(columns.SORTABLE) <= set(columns.ALL))
        self.assertNotIn("traits", columns.SORTABLE)
        self.assertIn("uuid", columns.SORTABLE)


class TestPresentation(testtools.TestCase):
    def test_row_follows_requested_names(self) -> None:
        allocation = Allocation.from_wire(WIRE)
        row = columns.row(allocation, ["node_uuid", "uuid"])
        self.assertEqual(("node-1", "u1"), row)

    def test_lists_and_mappings(self) -> None:
        allocation = Allocation.from_wire(WIRE)
        traits, extra, created, owner = columns.row(
            allocation, ["traits", "extra", "created_at", "owner"]
        )
        # The API's values, as python-ironicclient hands them to cliff.
        self.assertEqual(["CUSTOM_A", "CUSTOM_B"], traits)
        self.assertEqual({"a": 1, "b": "2"}, extra)
        json.dumps([traits, extra])
        self.assertEqual("2026-01-02T03:04:05+00:00", created)
        self.assertIsNone(owner)

    def test_missing_values_stay_none(self) -> None:
        """cliff prints None as python-ironicclient does ("None", null)."""
        allocation = Allocation.from_wire(WIRE)
        self.assertEqual((None, "u1"),
                         columns.row(allocation, ["owner", "uuid"]))

    def test_display_value_leaves_scalars(self) -> None:
        self.assertEqual("x", columns.display_value("x"))
        self.assertEqual(3, columns.display_value(3))
        stamp = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
        self.assertEqual(stamp.isoformat(), columns.display_value(stamp))
