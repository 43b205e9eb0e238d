"""Real python-ironicclient port, VIF and inspection commands on both
targets (``openstack baremetal port ...``, ``node vif ...``, ``node
inspect``), each test one scenario since every invocation costs about a
second."""

from __future__ import annotations

import json
import uuid
from typing import Any

from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.contract.test_ports import _mac
from baremetal_allocclient.tests.functional import targets


class IronicClientPortCli(base.ContractMixin):
    """Port and VIF commands of the real OpenStackClient."""

    def os_json(self, *args: str) -> Any:
        """Run ``openstack baremetal ARGS -f json`` and parse the output."""
        proc = self.target.openstack("baremetal", *args, "-f", "json")
        return json.loads(proc.stdout)

    def test_port_and_vif_commands(self) -> None:
        node = targets.unique("node")
        created = self.os_json("node", "create", "--driver", "fake-hardware",
                               "--name", node)
        address = _mac()
        port = self.os_json("port", "create", address.upper(), "--node",
                            created["uuid"], "--extra", "nic=eth0")
        self.assertEqual((address, created["uuid"], {"nic": "eth0"}),
                         (port["address"], port["node_uuid"], port["extra"]))
        listed = self.os_json("port", "list", "--node", node)
        self.assertEqual([{"uuid": port["uuid"], "address": address}],
                         listed)
        self.assertEqual([port["uuid"]], [p["uuid"] for p in self.os_json(
            "port", "list", "--address", address)])
        self.target.openstack("baremetal", "port", "set", port["uuid"],
                              "--extra", "bond=b0")
        shown = self.os_json("port", "show", port["uuid"])
        self.assertEqual({"nic": "eth0", "bond": "b0"}, shown["extra"])
        vif = str(uuid.uuid4())
        self.target.openstack("baremetal", "node", "vif", "attach", node,
                              vif)
        vifs = [v["id"] for v in self.os_json("node", "vif", "list", node)]
        self.assertEqual([vif] if self.is_reference else [], vifs)
        self.target.openstack("baremetal", "node", "vif", "detach", node,
                              vif)
        self.assertEqual([], self.os_json("node", "vif", "list", node))
        self.target.openstack("baremetal", "port", "delete", port["uuid"])
        self.assertEqual([], self.os_json("port", "list", "--node", node))
        self.target.openstack("baremetal", "node", "delete", node)

    def test_node_inspect(self) -> None:
        node = targets.unique("node")
        self.os_json("node", "create", "--driver", "fake-hardware",
                     "--name", node)
        self.target.openstack("baremetal", "node", "manage", node)
        self.target.wait_node(node, base.settled("manageable"))
        self.target.openstack("baremetal", "node", "inspect", node)
        inspected = self.target.wait_node(
            node, lambda n: base.settled("manageable")(n)
            and n["inspection_finished_at"] is not None, what="inspected")
        self.assertIsNone(inspected["last_error"])
        self.target.openstack("baremetal", "node", "delete", node)


# The broker passes these routes through to Ironic unchanged: the
# Ironic target checks its answers.
globals().update(targets.per_target(IronicClientPortCli, broker=False))
