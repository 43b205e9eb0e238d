"""Pure Placement rules: resource class names, reserved, capacity, errors."""

from __future__ import annotations

import testtools

from baremetal_allocclient.server.allocation.placement import client, model
from baremetal_allocclient.server.allocation.placement.model import NodeFacts


def _node(**overrides: object) -> NodeFacts:
    values: dict[str, object] = {
        "uuid": "u1", "name": "n1", "resource_class": "gold",
        "provision_state": "available", "maintenance": False,
        "power_state": "power off", "instance_uuid": None,
        "allocation_uuid": None,
    }
    values.update(overrides)
    return NodeFacts(**values)  # type: ignore[arg-type]


class NormalizeTests(testtools.TestCase):
    def test_nova_normalisation(self) -> None:
        self.assertEqual("CUSTOM_BAREMETAL_GOLD",
                         model.normalize_resource_class("baremetal-gold"))
        self.assertEqual("CUSTOM_A_B_C",
                         model.normalize_resource_class("a.b  c"))
        # Like Nova, always prefixed (even names already custom).
        self.assertEqual("CUSTOM_CUSTOM_X",
                         model.normalize_resource_class("CUSTOM_X"))


class ReservedTests(testtools.TestCase):
    def test_usable_node_is_not_reserved(self) -> None:
        state = model.desired_provider(_node())
        self.assertFalse(state.reserved)
        self.assertEqual(0, state.inventories()["CUSTOM_GOLD"]["reserved"])
        self.assertEqual(1, state.inventories()["CUSTOM_GOLD"]["total"])

    def test_each_unusable_reason_reserves_everything(self) -> None:
        cases = {
            "maintenance": _node(maintenance=True),
            "power_unknown": _node(power_state=None),
            "not_available": _node(provision_state="cleaning"),
            "associated": _node(instance_uuid="i-1"),
        }
        for reason, node in cases.items():
            self.assertEqual(reason, model.unusable_reason(node))
            inv = model.desired_provider(node).inventories()["CUSTOM_GOLD"]
            self.assertEqual(inv["total"], inv["reserved"], reason)

    def test_allocated_node_is_held_by_its_claim_not_reserved(self) -> None:
        node = _node(provision_state="active", instance_uuid="a-1",
                     allocation_uuid="a-1")
        self.assertFalse(model.desired_provider(node).reserved)

    def test_name_traits_and_no_resource_class(self) -> None:
        state = model.desired_provider(
            _node(name=None, resource_class=None,
                  traits=frozenset({"CUSTOM_X"}))
        )
        self.assertEqual("u1", state.name)
        self.assertEqual({}, state.inventories())
        self.assertEqual({"CUSTOM_X", model.MANAGED_TRAIT}, state.traits)

    def test_provider_matches(self) -> None:
        want = model.desired_provider(_node())
        inv = want.inventories()
        self.assertEqual((True, True, True), model.provider_matches(
            want, "n1", inv, want.traits))
        self.assertEqual((False, False, False), model.provider_matches(
            want, "other", {"CUSTOM_GOLD": {"total": 1, "reserved": 1}},
            []))


class CapacityTests(testtools.TestCase):
    def test_counts_by_class_and_reason(self) -> None:
        nodes = [
            _node(uuid="1"),
            _node(uuid="2", maintenance=True),
            _node(uuid="3", provision_state="manageable"),
            _node(uuid="4", allocation_uuid="a", instance_uuid="a"),
            _node(uuid="5", maintenance=True, power_state=None),
            _node(uuid="6", resource_class="silver"),
            _node(uuid="7", resource_class=None),
        ]
        rows = model.capacity(nodes)
        self.assertEqual(["gold", "silver"],
                         [r.resource_class for r in rows])
        self.assertEqual(
            {"resource_class": "gold", "total": 5, "allocated": 1,
             "reserved": 3, "free": 1,
             "reserved_by_reason": {"maintenance": 2, "not_available": 1}},
            rows[0].as_dict(),
        )
        only = model.capacity(nodes, "silver")
        self.assertEqual([("silver", 1, 1)],
                         [(r.resource_class, r.total, r.free) for r in only])


class ErrorCodeTests(testtools.TestCase):
    def test_codes(self) -> None:
        body = {"errors": [{"status": 409, "code": client.CONCURRENT_UPDATE,
                            "detail": "generation"}]}
        self.assertEqual((client.CONCURRENT_UPDATE, "generation"),
                         client.error_code(body))
        self.assertEqual((client.UNDEFINED, ""), client.error_code("<html>"))
        self.assertEqual((client.UNDEFINED, ""),
                         client.error_code({"errors": []}))

    def test_concurrent_update_property(self) -> None:
        err = client.PlacementError("PUT", "/x", 409,
                                    client.CONCURRENT_UPDATE, "d")
        self.assertTrue(err.concurrent_update)
        other = client.PlacementError("PUT", "/x", 409, client.UNDEFINED, "")
        self.assertFalse(other.concurrent_update)

    def test_versions(self) -> None:
        self.assertEqual((1, 39), client.parse_version("1.39"))
        self.assertEqual("1.31", client.microversion_text())
        self.assertRaises(ValueError, client.parse_version, "x")
