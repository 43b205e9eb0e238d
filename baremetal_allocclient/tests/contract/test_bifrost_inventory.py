"""Bifrost's own example inventories, as they are, on both targets.

Each example (JSON and YAML, copied from bifrost with their licence, see
``tests/functional/data/bifrost/NOTICE``) is enrolled as bifrost would:
on the reference server with ``baremetal-alloc-server enroll
--fake-hardware``, on Ironic through openstacksdk as the
``openstack.cloud.baremetal_node`` module does (the inventory read by the
same parser, so both get the same nodes).  Then, through the real
``openstack`` command: allocate, deploy with a config drive, undeploy and
delete, with ports and masked secrets checked on the way.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from baremetal_allocclient.server.ironic import inventory
from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.fixtures import preforked
from baremetal_allocclient.tests.functional import targets

_DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)),
                     "functional", "data", "bifrost")
EXAMPLES = ("baremetal.json.example", "baremetal.yml.example")
_CONFIGDRIVE = json.dumps({"meta_data": {"hostname": "node.example.com"}})


class BifrostInventoryContract(base.ContractMixin):
    """Enroll bifrost's examples, then allocate, deploy, undeploy, delete."""

    def _enroll(self, path: str, rc: str) -> list[inventory.NodeSpec]:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
        defaults = inventory.Defaults(resource_class=rc, any_driver=True)
        specs = list(inventory.parse(text, path, defaults).nodes)
        if self.is_reference:
            self._enroll_reference(path, rc)
        else:
            for spec in specs:
                self._enroll_ironic(spec)
        for spec in specs:
            self.target.wait_node(spec.uuid, base.settled("available"))
        return specs

    def _enroll_reference(self, path: str, rc: str) -> None:
        server = os.path.join(os.path.dirname(sys.executable),
                              "baremetal-alloc-server")
        proc = preforked.run(
            [server, "enroll", "--db", self.target.db_url, "--fake-hardware",
             "--default-resource-class", rc, path], timeout=120)
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertEqual("Enrolled 2 node(s)\n", proc.stdout)
        # What enrolling changed is said once, on stderr.
        self.assertIn("driver(s) ipmi enrolled as fake-hardware; "
                      "driver_info kept", proc.stderr)
        self.assertIn("ignored host-side key(s) that bifrost's playbooks "
                      "use: ipa_kernel_url, ipa_ramdisk_url, ipv4_address",
                      proc.stderr)

    def _enroll_ironic(self, spec: inventory.NodeSpec) -> None:
        """What openstack.cloud.baremetal_node does, with fake-hardware."""
        conn = self.target.connection()
        node = conn.baremetal.create_node(
            uuid=spec.uuid, name=spec.name, driver="fake-hardware",
            resource_class=spec.resource_class,
            properties=spec.properties, driver_info=spec.driver_info,
            instance_info=spec.instance_info)
        for nic in spec.nics:
            conn.baremetal.create_port(address=nic.address,
                                       node_id=node.id)
        conn.baremetal.set_node_provision_state(node, "manage", wait=True)
        conn.baremetal.set_node_provision_state(node, "provide", wait=True)
        conn.baremetal.set_node_power_state(node, "power off", wait=True)

    def _openstack_json(self, *args: str) -> Any:
        return json.loads(self.target.openstack(*args, "-f", "json").stdout)

    def _check_enrolled(self, spec: inventory.NodeSpec) -> None:
        node = self.target.node(spec.name)
        self.assertEqual("fake-hardware", node["driver"])
        self.assertEqual("******", node["driver_info"]["ipmi_password"])
        self.assertEqual("ADMIN", node["driver_info"]["ipmi_username"])
        self.assertEqual("32760", node["properties"]["memory_mb"])
        self.assertEqual("235", node["properties"]["local_gb"])
        self.assertNotIn("ram", node["properties"])
        ports = self.target.expect(200, "GET", f"/v1/nodes/{spec.uuid}/ports")
        self.assertEqual(sorted(n.address for n in spec.nics),
                         sorted(p["address"] for p in ports["ports"]))

    def _deploy_and_release(self, spec: inventory.NodeSpec, rc: str) -> None:
        allocation = self._openstack_json(
            "baremetal", "allocation", "create", "--resource-class", rc,
            "--candidate-node", spec.name, "--wait", "60")
        self.assertEqual("active", allocation["state"])
        self.assertEqual(spec.uuid, allocation["node_uuid"])
        self.target.openstack("baremetal", "node", "deploy", spec.name,
                              "--config-drive", _CONFIGDRIVE, "--wait", "60")
        node = self.target.node(spec.name)
        self.assertEqual("active", node["provision_state"])
        self.assertEqual(allocation["uuid"], node["allocation_uuid"])
        # The inventory's image, the allocation's traits, the drive masked.
        self.assertEqual({**spec.instance_info, "image_type": "whole-disk",
                          "traits": [], "configdrive": "******"},
                         node["instance_info"])
        self.target.openstack("baremetal", "node", "undeploy", spec.name,
                              "--wait", "60")
        self.assertReleased(spec.uuid, allocation["uuid"])
        self.assertEqual({}, self.target.node(spec.uuid)["instance_info"])

    def _delete(self, specs: list[inventory.NodeSpec]) -> None:
        for spec in specs:  # after a failure: a deployed node first
            if self.target.node(spec.uuid)["provision_state"] == "active":
                self.undeploy(spec.uuid)
        self.target.openstack("baremetal", "node", "delete",
                              *(spec.uuid for spec in specs))
        for nic in (nic for spec in specs for nic in spec.nics):
            self.assertEqual([], self.target.expect(
                200, "GET", "/v1/ports", params={"address": nic.address}
            )["ports"])

    def test_examples_as_they_are(self) -> None:
        # The two examples describe the same nodes (same UUIDs and MAC
        # addresses): each is enrolled and deleted in turn; the deploy
        # cycle runs once, on the node with an image in instance_info.
        for example in EXAMPLES:
            rc = targets.unique("bifrost")
            specs = self._enroll(os.path.join(_DATA, example), rc)
            try:
                for spec in specs:
                    self._check_enrolled(spec)
                if example == EXAMPLES[0]:
                    advanced = next(s for s in specs if s.instance_info)
                    self._deploy_and_release(advanced, rc)
            finally:
                self._delete(specs)


# The broker passes these routes through to Ironic unchanged: the
# Ironic target checks its answers.
globals().update(targets.per_target(BifrostInventoryContract, broker=False))
