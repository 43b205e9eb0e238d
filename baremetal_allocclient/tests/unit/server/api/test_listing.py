"""Collection parameters."""

from __future__ import annotations

import testtools

from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.api import listing
from baremetal_allocclient.server.api.errors import ApiError
from baremetal_allocclient.server.domain.errors import Invalid
from baremetal_allocclient.server.domain.paging import Page


class ParameterTests(testtools.TestCase):
    def test_bool(self) -> None:
        for value, expected in [("True", True), ("1", True), ("off", False),
                                ("no", False), (None, None)]:
            self.assertEqual(expected, schemas.boolean("x", value))
        error = self.assertRaises(Invalid, schemas.boolean, "x", "maybe")
        self.assertIn("Invalid x: Unrecognized value 'maybe'", error.message)

    def test_limit(self) -> None:
        self.assertEqual(listing.MAX_LIMIT, listing.parse_limit(None))
        self.assertEqual(5, listing.parse_limit("5"))
        self.assertEqual(listing.MAX_LIMIT, listing.parse_limit("100000"))
        for bad, words in [("0", "positive"), ("-1", "positive"),
                           ("x", "Expected an integer")]:
            error = self.assertRaises(ApiError, listing.parse_limit, bad)
            self.assertIn(words, error.message)

    def test_sort(self) -> None:
        self.assertEqual("id", listing.parse_sort_key(None, ["id"]))
        self.assertEqual("name", listing.parse_sort_key("name", ["name"]))
        self.assertRaises(ApiError, listing.parse_sort_key, "x", ["id"])
        self.assertEqual("asc", listing.parse_sort_dir(None))
        self.assertRaises(ApiError, listing.parse_sort_dir, "up")

    def test_fields(self) -> None:
        self.assertIsNone(listing.parse_fields(None))
        self.assertEqual(["a", "b"], listing.parse_fields("a, b,"))


class NextLinkTests(testtools.TestCase):
    page = Page(limit=2, sort_key="id", sort_dir="asc")

    def test_full_page_links_to_next(self) -> None:
        link = listing.next_link(
            "http://h:1", "allocations",
            {"state": "active", "marker": "old", "limit": "2"}, self.page,
            2, "u-2")
        self.assertEqual(
            "http://h:1/v1/allocations?state=active&sort_key=id&"
            "sort_dir=asc&limit=2&marker=u-2", link)

    def test_short_page_is_last(self) -> None:
        self.assertIsNone(listing.next_link("http://h:1", "nodes", {},
                                            self.page, 1, "u"))
        self.assertIsNone(listing.next_link("http://h:1", "nodes", {},
                                            self.page, 0, None))
