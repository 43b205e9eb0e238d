"""Pure pagination helpers."""

from __future__ import annotations

import testtools

from baremetal_allocclient import exceptions
from baremetal_allocclient.v1 import pagination


class PaginationHelpersTest(testtools.TestCase):

    def test_marker_from_next(self) -> None:
        link = ("http://h:6385/v1/allocations?fields=uuid&sort_key=id&"
                "sort_dir=asc&limit=2&marker=a2")
        self.assertEqual("a2", pagination.marker_from_next(link))
        self.assertIsNone(pagination.marker_from_next(
            "http://h/v1/allocations?limit=2"))
        self.assertIsNone(pagination.marker_from_next(None))
        self.assertIsNone(pagination.marker_from_next(""))

    def test_page_limit(self) -> None:
        table = [((None, None), None), ((10, None), 10), ((None, 7), 7),
                 ((10, 3), 3), ((2, 5), 2)]
        for args, expected in table:
            self.assertEqual(expected, pagination.page_limit(*args), args)

    def test_build_query(self) -> None:
        self.assertEqual(
            {"state": "active", "fields": "uuid,state", "limit": "5",
             "marker": "m"},
            pagination.build_query(
                {"state": "active", "node": None,
                 "fields": ("uuid", "state")}, limit=5, marker="m"))
        self.assertEqual({}, pagination.build_query({}, limit=None,
                                                    marker=None))

    def test_check_positive(self) -> None:
        pagination.check_positive("limit", None)
        pagination.check_positive("limit", 1)
        for bad in (0, -3, True):
            self.assertRaises(exceptions.InvalidArgument,
                              pagination.check_positive, "limit", bad)

    def test_items_of(self) -> None:
        self.assertEqual(([{"uuid": "a"}], None), pagination.items_of(
            {"allocations": [{"uuid": "a"}]}, "allocations"))
        for bad in ({}, [], {"allocations": {}}):
            self.assertRaises(exceptions.InvalidResponse,
                              pagination.items_of, bad, "allocations")
