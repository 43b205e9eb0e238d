"""One allocation request (v1/request.py): its fields, checks, lease step
and wire form, and the client methods that take it or its fields."""

from __future__ import annotations

import dataclasses
import datetime
import itertools
from typing import Any
from unittest import mock

import testtools

from baremetal_allocclient import exceptions, leases
from baremetal_allocclient.constraints import Constraints
from baremetal_allocclient.tests.unit.v1 import fakes
from baremetal_allocclient.tests.unit.v1.client_case import (
    ALLOCS,
    ClientTestCase,
    E,
)
from baremetal_allocclient.v1 import AllocationRequest, RequestFields
from baremetal_allocclient.v1.request import requested

NOW = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)


class RequestTest(testtools.TestCase):

    def test_the_keyword_arguments_are_the_fields(self) -> None:
        # Declared twice in one module (a TypedDict types the keyword
        # arguments); they cannot drift apart.
        self.assertEqual(
            [field.name for field in dataclasses.fields(AllocationRequest)],
            list(RequestFields.__annotations__))

    def test_values_are_kept_as_immutable_copies(self) -> None:
        extra = {"k": "v"}
        request = AllocationRequest("rc", traits=["CUSTOM_A"],
                                    candidate_nodes=iter(["n1"]),
                                    extra=extra, lease="1h30m")
        extra["k"] = "changed"
        self.assertEqual(("CUSTOM_A",), request.traits)
        self.assertEqual(("n1",), request.candidate_nodes)
        self.assertEqual({"k": "v"}, request.extra)
        self.assertEqual(datetime.timedelta(minutes=90), request.lease)
        self.assertEqual(request, dataclasses.replace(request))

    def test_bad_values_are_refused_when_built(self) -> None:
        for fields, words in (
            ({"traits": "CUSTOM_A"}, "not one string"),
            ({"candidate_nodes": ["n1", ""]}, "non-empty strings"),
            ({"constraints": {"shard": "s"}}, "got dict"),
            ({"lease": "forever"}, "invalid lease"),
            ({"lease": datetime.timedelta(0)}, "longer than zero"),
        ):
            error = self.assertRaises(
                exceptions.InvalidArgument, AllocationRequest, "rc",
                **fields)
            self.assertIn(words, str(error))

    def test_the_lease_step_records_the_lease_once(self) -> None:
        request = AllocationRequest("rc", extra={"k": "v"}, lease="2h")
        stamped = request.stamped(NOW)
        self.assertEqual({"k": "v", leases.EXPIRES_KEY: "2030-01-02T05:04:05Z",
                          leases.DURATION_KEY: "2h"}, stamped.extra)
        self.assertIsNone(stamped.lease)
        later = NOW + datetime.timedelta(minutes=5)
        self.assertEqual(stamped, stamped.stamped(later))
        plain = AllocationRequest("rc")
        self.assertIs(plain, plain.stamped(NOW))

    def test_wire_form(self) -> None:
        request = AllocationRequest(
            "rc", traits=("CUSTOM_A",), name="web", uuid="u1",
            extra={"k": "v"}, owner="p", lease="2h", queue=True,
            constraints=Constraints(shard="s"))
        self.assertEqual(
            {"resource_class": "rc", "traits": ["CUSTOM_A"], "name": "web",
             "uuid": "u1", "owner": "p", "extra": {"k": "v"},
             "constraints": {"shard": "s"}}, request.body())
        self.assertEqual(
            {"resource_class": "rc", "traits": ["CUSTOM_A"], "owner": "p",
             "constraints": {"shard": "s"}}, request.selection_body())
        selection = request.selection()
        self.assertEqual(("rc", ("CUSTOM_A",), "p", "s"),
                         (selection.resource_class, selection.traits,
                          selection.owner, selection.constraints.shard))
        self.assertEqual({"node": "n1"},
                         AllocationRequest(node="n1").body())

    def test_a_request_or_its_fields(self) -> None:
        made = AllocationRequest("rc", name="x")
        self.assertIs(made, requested(made, {}))
        self.assertEqual(made, requested("rc", {"name": "x"}))
        self.assertEqual(made, requested(None, {"resource_class": "rc",
                                                "name": "x"}))
        error = self.assertRaises(TypeError, requested, made, {"name": "y"})
        self.assertIn("not both (got name)", str(error))
        self.assertRaises(TypeError, requested, "rc",
                          {"resource_class": "rc"})


class ClientTakesTheRequestTest(ClientTestCase):
    """Each client method takes a request or its fields, alike."""

    def setUp(self) -> None:
        super().setUp()
        self.mock.get(E + "/v1", json={}, headers=self.headers())
        self.mock.post(ALLOCS, status_code=201, headers=self.headers(),
                       json=fakes.allocation(state="active", node_uuid="n"))

    def test_create_sends_the_same_body_either_way(self) -> None:
        fields: RequestFields = {
            "traits": ["CUSTOM_GPU"], "candidate_nodes": ["n1"],
            "name": "web-1", "uuid": "a1", "extra": {"k": "v"},
            "owner": "p1"}
        self.client.create_allocation("baremetal", **fields)
        self.client.create_allocation(AllocationRequest(
            "baremetal", traits=("CUSTOM_GPU",), candidate_nodes=("n1",),
            name="web-1", uuid="a1", extra={"k": "v"}, owner="p1"))
        self.client.allocate(
            request=AllocationRequest(resource_class="baremetal", **fields))
        first, second, third = (r.json() for r in self.history)
        self.assertEqual(first, second)
        self.assertEqual(first, third)

    def test_a_string_of_traits_is_refused_before_any_request(self) -> None:
        # allocate() used to split it into one trait per letter.
        for call in (lambda: self.client.allocate("rc", traits="CUSTOM_A"),
                     lambda: self.client.allocate_group(
                         2, "rc", traits="CUSTOM_A")):
            self.assertRaises(exceptions.InvalidArgument, call)
        self.assertEqual([], self.history)

    def test_constraints_of_another_type_are_refused(self) -> None:
        error = self.assertRaises(
            exceptions.InvalidArgument, self.client.create_allocation, "rc",
            constraints={"shard": "s"})
        self.assertIn("constraints must be", str(error))
        self.assertEqual([], self.history)

    def test_what_a_group_cannot_ask_for(self) -> None:
        for request, words in (
            (AllocationRequest(), "needs a resource_class"),
            (AllocationRequest("rc", uuid="u"), "uuid does not apply"),
            (AllocationRequest("rc", node="n"), "node does not apply"),
            (AllocationRequest("rc", queue=True), "queue does not apply"),
        ):
            error = self.assertRaises(exceptions.InvalidArgument,
                                      self.client.allocate_group, 2,
                                      request)
            self.assertIn(words, str(error))
        self.assertEqual([], self.history)

    def test_every_member_of_a_group_has_the_same_lease_end(self) -> None:
        # The clock moves a second each time it is read: a lease recorded
        # for each member on its own would end at another second.
        ticks = itertools.count()
        patcher = mock.patch.object(
            leases, "utcnow",
            side_effect=lambda: NOW + datetime.timedelta(seconds=next(ticks)))
        patcher.start()
        self.addCleanup(patcher.stop)

        def made(request: Any, context: Any) -> dict[str, Any]:
            context.status_code = 201
            uuid = request.json()["uuid"]
            return fakes.allocation(uuid, state="active",
                                    node_uuid="n-" + uuid)

        self.mock.post(ALLOCS, headers=self.headers(), json=made)
        members = self.client.allocate_group(
            2, AllocationRequest("rc", name="g", lease="2h"), timeout=60)
        self.assertEqual(["g-0", "g-1"],
                         [r.json()["name"] for r in self.history
                          if r.method == "POST"])
        ends = [r.json()["extra"][leases.EXPIRES_KEY] for r in self.history
                if r.method == "POST"]
        self.assertEqual(["2030-01-02T05:04:05Z"] * 2, ends)
        self.assertEqual(2, len(members))
