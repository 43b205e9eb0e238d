"""HTTP-level tests of listing allocations (v1/listing.py).
"""

from __future__ import annotations

from typing import Any

from baremetal_allocclient import exceptions
from baremetal_allocclient.tests.unit.v1 import fakes
from baremetal_allocclient.tests.unit.v1.client_case import (
    ALLOCS,
    ClientTestCase,
    query_of,
)


class PaginationTest(ClientTestCase):

    def _pages(self, pages: list[list[str]]) -> None:
        """Serve pages like Ironic: full pages end with a next link that
        keeps only limit and marker (Ironic drops the filters)."""
        def answer(request: Any, context: Any) -> dict[str, Any]:
            query = query_of(request)
            marker = query.get("marker", [None])[0]
            index = 0
            if marker is not None:
                index = next((i + 1 for i, page in enumerate(pages)
                              if page and page[-1] == marker), 0)
            page = pages[index] if index < len(pages) else []
            body: dict[str, Any] = {
                "allocations": [fakes.allocation(u) for u in page]}
            if index < len(pages) - 1:
                body["next"] = (f"http://public.example/v1/allocations?"
                                f"limit={len(page)}&marker={page[-1]}")
            return body

        self.mock.get(ALLOCS, json=answer, headers=self.headers())

    def test_follows_next_links_keeping_filters(self) -> None:
        self._pages([["a1", "a2"], ["a3", "a4"], ["a5"]])
        got = list(self.client.list_allocations(
            state="active", resource_class="rc", node="n1",
            sort_key="created_at", sort_dir="desc", page_size=2))
        self.assertEqual(["a1", "a2", "a3", "a4", "a5"],
                         [a.uuid for a in got])
        self.assertEqual(3, len(self.history))
        for request, marker in zip(self.history, [None, "a2", "a4"],
                                   strict=True):
            query = query_of(request)
            # Requests stay on our endpoint, not the link's host.
            self.assertTrue(request.url.startswith(ALLOCS))
            self.assertEqual(["active"], query["state"])
            self.assertEqual(["rc"], query["resource_class"])
            self.assertEqual(["n1"], query["node"])
            self.assertEqual(["created_at"], query["sort_key"])
            self.assertEqual(["desc"], query["sort_dir"])
            self.assertEqual(["2"], query["limit"])
            self.assertEqual(marker, query.get("marker", [None])[0])

    def test_limit_caps_the_total(self) -> None:
        self._pages([["a1", "a2"], ["a3", "a4"], ["a5"]])
        got = list(self.client.list_allocations(limit=3, page_size=2))
        self.assertEqual(["a1", "a2", "a3"], [a.uuid for a in got])
        self.assertEqual([["2"], ["1"]],
                         [query_of(r)["limit"] for r in self.history])

    def test_limit_alone_is_the_page_size(self) -> None:
        self._pages([["a1", "a2"]])
        list(self.client.list_allocations(limit=2))
        self.assertEqual(1, len(self.history))
        self.assertEqual(["2"], query_of(self.history[0])["limit"])

    def test_no_limit_lets_server_choose_and_iterates_lazily(self) -> None:
        self._pages([["a1"], ["a2"]])
        iterator = self.client.list_allocations(marker="a0")
        self.assertEqual([], self.history)
        self.assertEqual("a1", next(iterator).uuid)
        self.assertEqual(1, len(self.history))
        self.assertNotIn("limit", query_of(self.history[0]))

    def test_fields_are_joined(self) -> None:
        self._pages([["a1"]])
        got = list(self.client.list_allocations(fields=["uuid", "state"]))
        self.assertEqual(["uuid,state"], query_of(self.history[0])["fields"])
        self.assertEqual(1, len(got))

    def test_bad_arguments(self) -> None:
        for kwargs in ({"limit": 0}, {"page_size": -1},
                       {"sort_dir": "up"}, {"fields": ["nope"]}):
            # Checked when called, before iteration starts.
            self.assertRaises(exceptions.InvalidArgument,
                              self.client.list_allocations, **kwargs)
        self.assertEqual([], self.history)

    def test_owner_filter_needs_1_60(self) -> None:
        client = self.make_client(api_version="1.58")
        self.assertRaises(exceptions.VersionNotSupported, list,
                          client.list_allocations(owner="p1"))
        self.assertEqual([], self.history)
