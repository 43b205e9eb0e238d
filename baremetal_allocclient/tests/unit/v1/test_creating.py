"""HTTP-level tests of creating an allocation (v1/creating.py).
"""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session

from baremetal_allocclient import exceptions
from baremetal_allocclient.tests.unit.v1 import fakes
from baremetal_allocclient.tests.unit.v1.client_case import (
    ALLOCS,
    ClientTestCase,
    E,
)
from baremetal_allocclient.v1 import Client


class CreateCallsTest(ClientTestCase):
    """What a create sends."""

    def setUp(self) -> None:
        super().setUp()
        self.mock.get(E + "/", json={})  # Must not be needed.

    def test_create_sends_every_field(self) -> None:
        self.mock.post(ALLOCS, status_code=201, headers=self.headers(),
                       json=fakes.allocation(name="web-1", owner="p1"))
        created = self.client.create_allocation(
            "baremetal", traits=["CUSTOM_GPU"], candidate_nodes=["n1", "n2"],
            name="web-1", uuid="a1", extra={"k": "v"}, owner="p1")
        request = self.history[0]
        self.assertEqual("POST", request.method)
        self.assertEqual(ALLOCS, request.url)
        self.assertEqual("application/json", request.headers["Content-Type"])
        self.assertEqual("application/json", request.headers["Accept"])
        self.assertEqual({
            "resource_class": "baremetal", "traits": ["CUSTOM_GPU"],
            "candidate_nodes": ["n1", "n2"], "name": "web-1", "uuid": "a1",
            "extra": {"k": "v"}, "owner": "p1"}, request.json())
        self.assertEqual("web-1", created.name)
        self.assertEqual("allocating", created.state)
        self.assertEqual(1, len(self.history))

    def test_create_minimal_body(self) -> None:
        self.mock.post(ALLOCS, status_code=201, headers=self.headers(),
                       json=fakes.allocation())
        self.client.create_allocation("baremetal")
        body = self.history[0].json()
        # The client names the allocation itself, so a retry is safe.
        self.assertEqual(str(uuidlib.UUID(body["uuid"])), body.pop("uuid"))
        self.assertEqual({"resource_class": "baremetal"}, body)

    def test_create_backfill_without_resource_class(self) -> None:
        self.mock.post(ALLOCS, status_code=201, headers=self.headers(),
                       json=fakes.allocation(state="active",
                                             node_uuid="n1"))
        created = self.client.create_allocation(node="n1")
        body = self.history[0].json()
        body.pop("uuid")
        self.assertEqual({"node": "n1"}, body)
        self.assertEqual("n1", created.node_uuid)

    def test_create_rejects_bad_arguments_locally(self) -> None:
        self.assertRaises(exceptions.InvalidArgument,
                          self.client.create_allocation)
        self.assertRaises(exceptions.InvalidArgument,
                          self.client.create_allocation, "rc",
                          traits="CUSTOM_A")
        self.assertRaises(exceptions.InvalidArgument,
                          self.client.create_allocation, "rc",
                          candidate_nodes=[""])
        self.assertEqual([], self.history)


class PreferWaitTest(ClientTestCase):
    """``Prefer: wait`` on a create."""

    def _states(self, uuid: str, *bodies: dict[str, Any]) -> None:
        self.mock.get(ALLOCS + "/" + uuid,
                      [{"json": b, "headers": self.headers()} for b in bodies])

    def test_prefer_wait_stays_below_the_request_timeout(self) -> None:
        self.mock.post(ALLOCS, status_code=201, json=fakes.allocation())
        for timeout, expected in ((5.0, "wait=4"), (60.0, "wait=10"),
                                  (1.5, None)):
            adapter = ks_adapter.Adapter(
                ks_session.Session(timeout=timeout),
                service_type="baremetal", endpoint_override=E)
            client = Client(adapter, _clock=self.clock,
                            _sleep=self.clock.sleep)
            client.create_allocation("rc", prefer_wait=10)
            self.assertEqual(expected,
                             self.history[-1].headers.get("Prefer"), timeout)

    def test_create_sends_no_preference_unless_asked(self) -> None:
        self.mock.post(ALLOCS, status_code=201, json=fakes.allocation())
        self.client.create_allocation("rc")
        self.client.create_allocation("rc", prefer_wait=0.5)
        self.assertEqual([None, None], [r.headers.get("Prefer")
                                        for r in self.history])
