"""Project-scoping decisions (pure)."""

from __future__ import annotations

import testtools

from baremetal_allocclient.server.api.errors import as_api_error
from baremetal_allocclient.server.db import node_lookup
from baremetal_allocclient.server.domain import policy
from baremetal_allocclient.server.domain.errors import Forbidden
from baremetal_allocclient.server.domain.principal import Principal

ADMIN = Principal("root", None, True)
ALICE = Principal("alice", "p1", False)


class PolicyTests(testtools.TestCase):

    def test_allocation_visible(self) -> None:
        self.assertTrue(policy.allocation_visible(ADMIN, None))
        self.assertTrue(policy.allocation_visible(ADMIN, "p2"))
        self.assertTrue(policy.allocation_visible(ALICE, "p1"))
        self.assertFalse(policy.allocation_visible(ALICE, "p2"))
        self.assertFalse(policy.allocation_visible(ALICE, None))

    def test_node_visible(self) -> None:
        self.assertTrue(policy.node_visible(ALICE, "p1", None))
        self.assertTrue(policy.node_visible(ALICE, "p2", "p1"))
        self.assertFalse(policy.node_visible(ALICE, "p2", "p3"))
        self.assertFalse(policy.node_visible(ALICE, None, None))
        self.assertTrue(policy.node_visible(ADMIN, None, None))

    def test_create_owner(self) -> None:
        self.assertEqual("p1", policy.create_owner(ALICE, None))
        self.assertEqual("p1", policy.create_owner(ALICE, ""))
        self.assertEqual("p1", policy.create_owner(ALICE, "p1"))
        error = self.assertRaises(Forbidden, policy.create_owner, ALICE,
                                  "p2")
        self.assertEqual(403, as_api_error(error).status)
        self.assertEqual("p2", policy.create_owner(ADMIN, "p2"))
        self.assertIsNone(policy.create_owner(ADMIN, None))

    def test_list_owner(self) -> None:
        self.assertEqual("p1", policy.list_owner(ALICE, None))
        self.assertEqual("p1", policy.list_owner(ALICE, "p1"))
        error = self.assertRaises(Forbidden, policy.list_owner, ALICE, "p2")
        self.assertEqual(403, as_api_error(error).status)
        self.assertIsNone(policy.list_owner(ADMIN, None))
        self.assertEqual("p2", policy.list_owner(ADMIN, "p2"))

    def test_node_filter(self) -> None:
        self.assertIsNone(node_lookup.node_filter(ADMIN))
        clause = node_lookup.node_filter(ALICE)
        self.assertIsNotNone(clause)
        self.assertIn("owner", str(clause))
        self.assertIn("lessee", str(clause))
