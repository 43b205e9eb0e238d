"""Property: listing yields exactly the expected allocations, in order.

A fake Ironic serves N allocations with its own maximum page size and
next links that drop the filters, as Ironic does; whatever the caller's
limit and page size, the iterator must return the first ``limit`` items,
keep the filter on every request and never fetch more pages than needed
(plus the one empty page Ironic makes necessary after a full last page).
"""

from __future__ import annotations

import math
from typing import Any
from urllib import parse

import requests_mock
import testtools
from hypothesis import given, settings
from hypothesis import strategies as st
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session

from baremetal_allocclient.tests.unit.v1 import fakes
from baremetal_allocclient.v1 import Client

ALLOCS = fakes.ENDPOINT + "/v1/allocations"


def _fake_ironic(uuids: list[str], max_limit: int) -> Any:
    def answer(request: Any, context: Any) -> dict[str, Any]:
        query = parse.parse_qs(parse.urlsplit(request.url).query)
        limit = min(int(query.get("limit", [max_limit])[0]), max_limit)
        start = 0
        if "marker" in query:
            start = uuids.index(query["marker"][0]) + 1
        page = uuids[start:start + limit]
        body: dict[str, Any] = {
            "allocations": [fakes.allocation(u) for u in page]}
        if page and len(page) == limit:
            body["next"] = (f"{ALLOCS}?limit={limit}&marker={page[-1]}")
        return body

    return answer


class ListingPropertyTest(testtools.TestCase):

    @settings(max_examples=150, deadline=None)
    @given(total=st.integers(0, 40), max_limit=st.integers(1, 12),
           limit=st.none() | st.integers(1, 50),
           page_size=st.none() | st.integers(1, 15))
    def test_listing(self, total: int, max_limit: int, limit: int | None,
                     page_size: int | None) -> None:
        uuids = [f"a{i:03d}" for i in range(total)]
        client = Client(ks_adapter.Adapter(
            ks_session.Session(), service_type="baremetal",
            endpoint_override=fakes.ENDPOINT))
        with requests_mock.Mocker() as mock:
            mock.get(ALLOCS, json=_fake_ironic(uuids, max_limit))
            got = [a.uuid for a in client.list_allocations(
                state="active", limit=limit, page_size=page_size)]
            history = mock.request_history
        wanted = uuids if limit is None else uuids[:limit]
        self.assertEqual(wanted, got)
        for request in history:
            self.assertIn("state=active", request.url)
        page = min(x for x in (max_limit, page_size, limit) if x is not None)
        bound = max(1, math.ceil(len(wanted) / page) + 1)
        self.assertLessEqual(len(history), bound)
