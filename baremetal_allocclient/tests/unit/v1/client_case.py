"""A client on requests-mock with a fake clock, shared by the SDK's
HTTP-level unit tests, and a fake Ironic that settles allocations on time.
"""

from __future__ import annotations

from typing import Any
from urllib import parse

import testtools
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from requests_mock.contrib import fixture as rm_fixture

from baremetal_allocclient.tests.unit.v1 import fakes
from baremetal_allocclient.v1 import Client

E = fakes.ENDPOINT
ALLOCS = E + "/v1/allocations"


def query_of(request: Any) -> dict[str, list[str]]:
    return parse.parse_qs(parse.urlsplit(request.url).query)


class ClientTestCase(testtools.TestCase):
    """A client on a plain session, a fake clock and a request mock."""

    server_max = "1.73"

    def setUp(self) -> None:
        super().setUp()
        self.mock = self.useFixture(rm_fixture.Fixture())
        self.clock = fakes.FakeClock()
        self.client = self.make_client()

    def make_client(self, **kwargs: Any) -> Client:
        adapter = ks_adapter.Adapter(
            ks_session.Session(), service_type="baremetal",
            endpoint_override=kwargs.pop("endpoint", E))
        return Client(adapter, _clock=self.clock, _sleep=self.clock.sleep,
                      **kwargs)

    def headers(self, **extra: str) -> dict[str, str]:
        headers = fakes.version_headers(high=self.server_max)
        headers.update(extra)
        return headers

    @property
    def history(self) -> list[Any]:
        return self.mock.request_history

    def sent_versions(self) -> list[str | None]:
        return [r.headers.get("X-OpenStack-Ironic-API-Version")
                for r in self.history]


class FakeAllocationServer:
    """Allocations that settle at given (fake) times, served like Ironic."""

    def __init__(self, clock: fakes.FakeClock,
                 settle: dict[str, tuple[float, str]],
                 resource_class: str = "rc") -> None:
        self.clock = clock
        self.settle = settle
        self.resource_class = resource_class

    def body(self, uuid: str) -> dict[str, Any]:
        when, final = self.settle[uuid]
        state = final if self.clock.now >= when else "allocating"
        return fakes.allocation(
            uuid, state=state, resource_class=self.resource_class,
            last_error="boom" if state == "error" else None)

    def get(self, request: Any, context: Any) -> dict[str, Any]:
        return self.body(request.path.rsplit("/", 1)[-1])

    def list(self, request: Any, context: Any) -> dict[str, Any]:
        query = query_of(request)
        items = [self.body(u) for u in self.settle]
        if "state" in query:
            items = [i for i in items if i["state"] == query["state"][0]]
        if "resource_class" in query:
            items = [i for i in items
                     if i["resource_class"] == query["resource_class"][0]]
        if "fields" in query:
            names = query["fields"][0].split(",")
            items = [{k: i[k] for k in names} for i in items]
        return {"allocations": items}
