"""Parsing of the typed resources from their wire form."""

from __future__ import annotations

import dataclasses
import datetime
import operator
from typing import Any

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from baremetal_allocclient import exceptions
from baremetal_allocclient.tests.unit.v1 import fakes
from baremetal_allocclient.v1 import Allocation, Node, resources

UTC = datetime.timezone.utc


class AllocationTest(testtools.TestCase):

    def test_full_body(self) -> None:
        alloc = Allocation.from_wire(fakes.allocation(
            "a1", name="web-1", state="active", traits=["CUSTOM_A"],
            candidate_nodes=["n1"], node_uuid="n1", owner="p1",
            extra={"k": [1]}, updated_at="2024-05-01T10:00:01Z"))
        self.assertEqual("a1", alloc.uuid)
        self.assertEqual(("CUSTOM_A",), alloc.traits)
        self.assertEqual(("n1",), alloc.candidate_nodes)
        self.assertEqual({"k": [1]}, dict(alloc.extra or {}))
        self.assertEqual(datetime.datetime(2024, 5, 1, 10, 0, 0, 123456,
                                           tzinfo=UTC), alloc.created_at)
        self.assertEqual(datetime.datetime(2024, 5, 1, 10, 0, 1, tzinfo=UTC),
                         alloc.updated_at)
        self.assertEqual("self", (alloc.links or ())[0]["rel"])
        self.assertEqual("web-1", alloc.raw["name"])
        self.assertEqual("a1", alloc.ident)

    def test_absent_fields_are_none(self) -> None:
        alloc = Allocation.from_wire({"uuid": "a1"})
        for spec in Allocation.field_specs():
            if spec.name != "uuid":
                self.assertIsNone(getattr(alloc, spec.name), spec.name)

    def test_immutable_and_hashable(self) -> None:
        alloc = Allocation.from_wire(fakes.allocation())
        self.assertRaises(dataclasses.FrozenInstanceError, setattr, alloc,
                          "state", "active")
        self.assertRaises(TypeError, operator.setitem, alloc.extra, "k", "v")
        self.assertEqual(hash(alloc),
                         hash(Allocation.from_wire(fakes.allocation())))
        self.assertEqual(alloc, Allocation.from_wire(fakes.allocation()))

    def test_wrong_types_are_invalid_responses(self) -> None:
        for field, value in (("traits", "CUSTOM_A"), ("extra", []),
                             ("created_at", "yesterday"), ("name", 3)):
            error = self.assertRaises(
                exceptions.InvalidResponse, Allocation.from_wire,
                fakes.allocation(**{field: value}))
            self.assertIn(field, str(error))
        self.assertRaises(exceptions.InvalidResponse, Allocation.from_wire,
                          ["not", "an", "object"])

    def test_to_dict_round_trips_wire_names(self) -> None:
        body = fakes.allocation(state="active", traits=["CUSTOM_A"])
        plain = Allocation.from_wire(body).to_dict()
        self.assertEqual("2024-05-01T10:00:00.123456+00:00",
                         plain["created_at"])
        self.assertEqual(["CUSTOM_A"], plain["traits"])
        self.assertEqual(set(body), set(plain))

    def test_ident_needs_uuid_or_name(self) -> None:
        self.assertEqual("n", Allocation(name="n").ident)
        self.assertRaises(exceptions.InvalidArgument,
                          lambda: Allocation(state="active").ident)


class FieldTableTest(testtools.TestCase):

    def test_allocation_columns_follow_api_names(self) -> None:
        self.assertEqual(
            ("uuid", "name", "state", "resource_class", "traits",
             "candidate_nodes", "node_uuid", "owner", "last_error", "extra",
             "created_at", "updated_at", "links"),
            tuple(wire for wire, _label in resources.columns(Allocation)))
        self.assertIn(("resource_class", "Resource Class"),
                      resources.columns(Allocation))

    def test_validate_fields(self) -> None:
        self.assertIsNone(resources.validate_fields(Allocation, None))
        self.assertEqual(("uuid", "state"), resources.validate_fields(
            Allocation, ["uuid", "state", "uuid"]))
        self.assertEqual(("uuid", "state"), resources.validate_fields(
            Allocation, "uuid,state"))
        self.assertRaises(exceptions.InvalidArgument,
                          resources.validate_fields, Allocation, [])
        error = self.assertRaises(exceptions.InvalidArgument,
                                  resources.validate_fields, Node,
                                  ["uuid", "driver_info"])
        self.assertIn("driver_info", str(error))


class NodeTest(testtools.TestCase):

    def test_node_view_ignores_unknown_fields(self) -> None:
        node = Node.from_wire({"uuid": "n1", "maintenance": True,
                               "driver_info": {"ipmi_password": "x"},
                               "created_at": "2024-05-01T10:00:00"})
        self.assertTrue(node.maintenance)
        self.assertEqual(UTC, (node.created_at or datetime.datetime.now())
                         .tzinfo)
        self.assertNotIn("driver_info", node.to_dict())
        self.assertRaises(exceptions.InvalidResponse, Node.from_wire,
                          {"maintenance": "yes"})


_WIRE_TEXT = st.text(max_size=6)
_WIRE_TIMES = st.datetimes(timezones=st.none() | st.just(UTC)).map(
    lambda moment: moment.isoformat())


class FromWireIsTheConstructorTest(testtools.TestCase):
    """``from_wire`` fills the frozen dataclass without its ``__init__``
    (for speed): the result must be what ``__init__`` makes, field for
    field, equal and with the same hash, and as immutable."""

    @settings(max_examples=150, derandomize=True)
    @given(st.fixed_dictionaries({}, optional={
        "uuid": _WIRE_TEXT, "name": _WIRE_TEXT, "state": _WIRE_TEXT,
        "resource_class": _WIRE_TEXT, "node_uuid": _WIRE_TEXT,
        "owner": _WIRE_TEXT, "last_error": _WIRE_TEXT,
        "traits": st.lists(_WIRE_TEXT, max_size=3),
        "candidate_nodes": st.lists(_WIRE_TEXT, max_size=3),
        "extra": st.dictionaries(_WIRE_TEXT, st.integers(), max_size=3),
        "created_at": _WIRE_TIMES, "updated_at": _WIRE_TIMES,
        "links": st.lists(st.fixed_dictionaries({"href": _WIRE_TEXT}),
                          max_size=2),
        "unknown": _WIRE_TEXT,
    }))
    def test_same_as_init(self, wire: dict[str, Any]) -> None:
        parsed = Allocation.from_wire(wire)
        values = {
            spec.name: spec.parser(wire[spec.wire])
            for spec in Allocation.field_specs() if spec.wire in wire}
        built = Allocation(**values, raw=parsed.raw)
        self.assertEqual(vars(built), vars(parsed))
        self.assertEqual(built, parsed)
        self.assertEqual(hash(built), hash(parsed))
        self.assertRaises(dataclasses.FrozenInstanceError, setattr,
                          parsed, "uuid", "other")
        self.assertEqual(wire, dict(parsed.raw))
