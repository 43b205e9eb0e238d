"""HTTP-level tests of the node calls (v1/nodes.py).
"""

from __future__ import annotations

import datetime

from baremetal_allocclient.tests.unit.v1.client_case import (
    ClientTestCase,
    E,
)
from baremetal_allocclient.v1 import Node


class NodeCallsTest(ClientTestCase):
    """Reading a node."""

    def setUp(self) -> None:
        super().setUp()
        self.mock.get(E + "/", json={})  # Must not be needed.

    def test_get_node(self) -> None:
        self.mock.get(E + "/v1/nodes/n1", headers=self.headers(), json={
            "uuid": "n1", "name": "node-1", "provision_state": "available",
            "power_state": "power off", "maintenance": False,
            "resource_class": "baremetal", "traits": ["CUSTOM_A"],
            "allocation_uuid": "a1", "instance_uuid": "a1",
            "instance_info": {"traits": ["CUSTOM_A"]},
            "driver_info": {"secret": "***"},
            "created_at": "2024-05-01T10:00:00+00:00"})
        node = self.client.get_node("n1")
        self.assertIsInstance(node, Node)
        self.assertEqual(("available", "power off", False, ("CUSTOM_A",)),
                         (node.provision_state, node.power_state,
                          node.maintenance, node.traits))
        self.assertEqual("a1", node.allocation_uuid)
        self.assertIsNone(node.lessee)
        self.assertEqual(datetime.datetime(2024, 5, 1, 10, 0,
                                           tzinfo=datetime.timezone.utc),
                         node.created_at)
