"""The fault suite's lifecycle invariants: a waiting allocation holds no
node; an allocation released on lease expiry leaves its node free."""

from __future__ import annotations

import datetime

import testtools

from baremetal_allocclient.tests.functional.faults import _invariants

DEADLINE = datetime.datetime(2030, 1, 1)


def _node(node_id: int, allocation_id: int | None = None,
          instance_uuid: str | None = None) -> _invariants.NodeRow:
    return _invariants.NodeRow(
        node_id, f"n{node_id}", None, "rc", None, None, allocation_id,
        instance_uuid, "available", None, None, frozenset())


def _allocation(alloc_id: int, state: str, node_id: int | None = None,
                deadline: datetime.datetime | None = DEADLINE
                ) -> _invariants.AllocationRow:
    return _invariants.AllocationRow(
        alloc_id, f"a{alloc_id}", None, node_id, state, "rc", (), (), None,
        None, {}, {}, deadline)


class WaitingHoldsNoNodeTest(testtools.TestCase):

    def test_a_waiting_allocation_with_a_node_is_reported(self) -> None:
        snapshot = _invariants.Snapshot(
            {1: _node(1, allocation_id=7, instance_uuid="a7")},
            {7: _allocation(7, "allocating", node_id=1)})
        self.assertEqual(
            ["allocation a7 waits in line but holds node n1",
             "node n1 names allocation a7, which waits in line"],
            _invariants.waiting_holds_no_node(snapshot))
        self.assertIn("node n1 names allocation a7, which waits in line",
                      _invariants.violations(snapshot, settle=False))

    def test_waiting_without_a_node_and_served_ones_pass(self) -> None:
        snapshot = _invariants.Snapshot(
            {1: _node(1, allocation_id=8, instance_uuid="a8")},
            {7: _allocation(7, "allocating"),
             8: _allocation(8, "active", node_id=1),
             9: _allocation(9, "allocating", deadline=None)})
        self.assertEqual([], _invariants.waiting_holds_no_node(snapshot))


class ReleasedByExpiryTest(testtools.TestCase):

    def test_gone_and_free_or_held_by_a_later_one_passes(self) -> None:
        snapshot = _invariants.Snapshot(
            {1: _node(1), 2: _node(2, allocation_id=9, instance_uuid="a9")},
            {9: _allocation(9, "active", node_id=2)})
        self.assertEqual([], _invariants.released_by_expiry_left_free(
            snapshot, {"a5": "n1", "a6": "n2"}))

    def test_still_stored_or_still_named_is_reported(self) -> None:
        snapshot = _invariants.Snapshot(
            {1: _node(1, instance_uuid="a5")},
            {6: _allocation(6, "active", deadline=None)})
        self.assertEqual(
            ["node n1 still has instance_uuid a5, released on lease expiry",
             "node n1, released on lease expiry of a5, holds no allocation "
             "but has instance_uuid a5",
             "allocation a6 was released on lease expiry but is still "
             "stored"],
            _invariants.released_by_expiry_left_free(
                snapshot, {"a5": "n1", "a6": "n9"}))
