"""Release rules for allocations and nodes."""

from __future__ import annotations

import testtools

from baremetal_allocclient.server.allocation.release import refusals
from baremetal_allocclient.server.allocation.release.refusals import NodeView


def node(state: str, target: str | None = None,
         maintenance: bool = False) -> NodeView:
    return NodeView("n-uuid", state, target, maintenance)


class AllocationRemovalTests(testtools.TestCase):
    def test_table(self) -> None:
        cases = [
            (node("available"), None),
            (node("manageable"), None),
            (node("active"), "because the node is active"),
            (node("active", maintenance=True), None),
            (node("deploying", "active"), "where updates are not allowed"),
            (node("deploying", "active", maintenance=True), None),
            (node("cleaning", "available"), "where updates are not allowed"),
            (node("deploy failed", "active"), None),
            (node("error"), None),
        ]
        for view, expected in cases:
            error = refusals.allocation_removal_error(view, "a-uuid")
            if expected is None:
                self.assertIsNone(error, str(view))
            else:
                assert error is not None, view
                self.assertIn(expected, error)
                self.assertIn("a-uuid", error)


class InstanceUuidRemovalTests(testtools.TestCase):
    def test_table(self) -> None:
        cases = [
            (node("available"), False),
            (node("enroll"), False),
            (node("manageable"), False),
            (node("active"), True),
            (node("active", maintenance=True), False),
            (node("deploying", "active"), True),
        ]
        for view, refused in cases:
            error = refusals.instance_uuid_removal_error(view)
            self.assertEqual(refused, error is not None, str(view))


class NodeDeletionTests(testtools.TestCase):
    def test_table(self) -> None:
        cases = [
            (node("available"), None, None),
            (node("available"), "i-uuid", "associated with instance"),
            (node("active", maintenance=True), "i-uuid", None),
            (node("active"), None, "Can not delete node"),
            (node("enroll"), None, None),
        ]
        for view, instance, expected in cases:
            error = refusals.node_deletion_error(view, instance)
            if expected is None:
                self.assertIsNone(error)
            else:
                assert error is not None
                self.assertIn(expected, error)
