"""openstacksdk's port, VIF and inspection calls against both targets.

The same calls openstacksdk's own functional tests for ports and VIFs
make (``openstack/tests/functional/baremetal/v1/test_port.py`` and
``TestBareMetalVif``), and what ``openstack.cloud.baremetal_inspect``
runs.
"""

from __future__ import annotations

import uuid
from typing import Any

from openstack import exceptions as sdk_exc

from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.contract.test_ports import _mac
from baremetal_allocclient.tests.functional import targets


class SdkPorts(base.ContractMixin):
    """``conn.baremetal`` port, VIF and inspection calls."""

    conn: Any

    def setUp(self) -> None:
        super().setUp()
        self.conn = self.sdk_connection()

    def test_port_create_get_list_update_delete(self) -> None:
        bm = self.conn.baremetal
        node = bm.create_node(driver="fake-hardware",
                              name=targets.unique("node"))
        address = _mac()
        port = bm.create_port(node_uuid=node.id, address=address,
                              extra={"a": 1})
        self.assertEqual(node.id, port.node_id)
        self.assertIs(True, port.is_pxe_enabled)
        self.assertIsNone(port.port_group_id)
        with_fields = bm.get_port(port.id, fields=["uuid", "extra",
                                                   "node_id"])
        self.assertEqual(port.id, with_fields.id)
        self.assertIsNone(with_fields.address)
        self.assertEqual([port.id], [p.id for p in bm.ports(
            address=address)])
        self.assertEqual([port.id], [p.id for p in bm.ports(
            node=node.name)])
        listed = next(bm.ports(details=True, address=address))
        self.assertEqual({"a": 1}, listed.extra)
        new_address = _mac()
        port.address = new_address
        port.extra = {"answer": 42}
        port = bm.update_port(port)
        self.assertEqual((new_address, {"answer": 42}),
                         (port.address, port.extra))
        port = bm.patch_port(port, [{"path": "/extra/more", "op": "add",
                                     "value": 1}])
        self.assertEqual({"answer": 42, "more": 1},
                         bm.get_port(port.id).extra)
        bm.delete_port(port, ignore_missing=False)
        self.assertRaises(sdk_exc.NotFoundException, bm.get_port, port.id)
        self.assertIsNone(bm.find_port(port.id))
        bm.delete_node(node)

    def test_node_vif_attach_list_detach(self) -> None:
        bm = self.conn.baremetal
        node = bm.create_node(driver="fake-hardware",
                              network_interface="noop")
        vif = str(uuid.uuid4())
        bm.attach_vif_to_node(node, vif)
        listed = bm.list_node_vifs(node)
        self.assertEqual([vif] if self.is_reference else [], listed)
        self.assertTrue(bm.detach_vif_from_node(node, vif,
                                                ignore_missing=False))
        missing = "5c9dcd04-2073-49bc-9618-99ae634d8971"
        self.assertRaises(sdk_exc.NotFoundException,
                          bm.attach_vif_to_node, missing, vif)
        self.assertRaises(sdk_exc.NotFoundException,
                          bm.list_node_vifs, missing)
        bm.delete_node(node)

    def test_inspection(self) -> None:
        bm = self.conn.baremetal
        node = bm.create_node(driver="fake-hardware")
        bm.set_node_provision_state(node, "manage", wait=True, timeout=60)
        node = bm.set_node_provision_state(node, "inspect", wait=True,
                                           timeout=60)
        self.assertEqual("manageable", node.provision_state)
        self.assertIsNotNone(
            self.target.node(node.id)["inspection_finished_at"])
        bm.delete_node(node)


# The broker passes these routes through to Ironic unchanged: the
# Ironic target checks its answers.
globals().update(targets.per_target(SdkPorts, broker=False))
