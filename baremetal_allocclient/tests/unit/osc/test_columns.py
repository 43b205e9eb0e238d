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
        wire_names = [spec.wire for spec in Allocation.field_specs()]
        self.assertEqual([n for n in wire_names if n != "links"]
                         + ["lease_expires_at"], list(columns.ALL))

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
        self.assertEqual(("",), columns.row(plain, ["lease_expires_at"],
                                            "value"))

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
        self.assertEqual("CUSTOM_A, CUSTOM_B", traits.human_readable())
        self.assertEqual(["CUSTOM_A", "CUSTOM_B"], traits.machine_readable())
        self.assertEqual("a=1, b='2'", extra.human_readable())
        self.assertEqual({"a": 1, "b": "2"}, extra.machine_readable())
        # Machine-readable values serialise as JSON directly.
        json.dumps([traits.machine_readable(), extra.machine_readable()])
        self.assertEqual("2026-01-02T03:04:05+00:00", created)
        self.assertIsNone(owner)

    def test_text_formats_print_missing_values_as_empty(self) -> None:
        allocation = Allocation.from_wire(WIRE)
        for fmt in ("value", "shell", "csv"):
            self.assertEqual(("", "u1"),
                             columns.row(allocation, ["owner", "uuid"], fmt))
        for fmt in ("json", "yaml", "table", None):
            self.assertEqual((None, "u1"),
                             columns.row(allocation, ["owner", "uuid"], fmt))

    def test_display_value_leaves_scalars(self) -> None:
        self.assertEqual("x", columns.display_value("x"))
        self.assertEqual(3, columns.display_value(3))
        stamp = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
        self.assertEqual(stamp.isoformat(), columns.display_value(stamp))
