"""Real python-ironicclient commands against both targets.

``openstack baremetal ...`` and ``baremetal ...`` come from the Ironic
virtualenv, where no plugin of this project is installed: this is the
client people already run, unchanged.  Every invocation costs about a
second, so each test walks a whole scenario.  Conflicts are not driven
through the CLI: ironicclient retries a 409 five times, two seconds apart.
"""

from __future__ import annotations

import json
from typing import Any

from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.functional import targets


class IronicClientCli(base.ContractMixin):
    """Node and allocation commands of the real OpenStackClient."""

    def os_json(self, *args: str) -> Any:
        """Run ``openstack baremetal ARGS -f json`` and parse the output."""
        proc = self.target.openstack("baremetal", *args, "-f", "json")
        return json.loads(proc.stdout)

    def test_node_lifecycle_then_allocation_lifecycle(self) -> None:
        """node create/manage/provide/power off; allocation CRUD; undeploy."""
        rc = targets.unique("rc")
        node_name = targets.unique("node")
        created = self.os_json("node", "create", "--driver", "fake-hardware",
                               "--resource-class", rc, "--name", node_name)
        self.assertEqual("enroll", created["provision_state"])
        self.target.openstack("baremetal", "node", "add", "trait",
                              node_name, "CUSTOM_CLI")
        # No --wait on node verbs: ironicclient polls every 2 s; the HTTP
        # wait below polls faster.
        self.target.openstack("baremetal", "node", "manage", node_name)
        self.target.wait_node(node_name, base.settled("manageable"))
        self.target.openstack("baremetal", "node", "provide", node_name)
        self.target.wait_node(node_name, base.settled("available"))
        self.target.openstack("baremetal", "node", "power", "off", node_name)
        self.target.wait_node(node_name,
                              lambda n: n["power_state"] == "power off")
        shown = self.os_json("node", "show", node_name)
        self.assertEqual("available", shown["provision_state"])
        self.assertEqual(["CUSTOM_CLI"], shown["traits"])
        self.assertEqual(None, shown["allocation_uuid"])

        name = targets.unique("alloc")
        alloc = self.os_json("allocation", "create", "--resource-class", rc,
                             "--trait", "CUSTOM_CLI", "--name", name,
                             "--extra", "k=v", "--wait", "60")
        self.assertEqual("active", alloc["state"])
        self.assertEqual(created["uuid"], alloc["node_uuid"])
        self.assertEqual(["CUSTOM_CLI"], alloc["traits"])
        self.assertEqual({"k": "v"}, alloc["extra"])
        self.assertEqual(alloc, self.os_json("allocation", "show", name))
        self.assertEqual(
            {"uuid": alloc["uuid"], "state": "active"},
            self.os_json("allocation", "show", alloc["uuid"],
                         "--fields", "uuid", "state"))
        # Further checks go over HTTP: each CLI run costs a second or two.
        self.assertReserved(self.target.allocation(alloc["uuid"]))

        listed = self.os_json("allocation", "list", "--resource-class", rc)
        self.assertEqual(
            [{"uuid": alloc["uuid"], "name": name, "resource_class": rc,
              "state": "active", "node_uuid": created["uuid"]}], listed)
        self.assertEqual([alloc["uuid"]], [a["uuid"] for a in self.os_json(
            "allocation", "list", "--node", node_name, "--state", "active")])
        self.assertEqual([], self.os_json(
            "allocation", "list", "--resource-class", rc, "--state",
            "error"))
        self.assertEqual([{"uuid": alloc["uuid"], "name": name}],
                         self.os_json("allocation", "list",
                                      "--resource-class", rc,
                                      "--fields", "uuid", "name"))

        renamed = targets.unique("alloc")
        self.target.openstack("baremetal", "allocation", "set", name,
                              "--name", renamed, "--extra", "x=y")
        self.target.openstack("baremetal", "allocation", "unset", renamed,
                              "--extra", "k")
        updated = self.os_json("allocation", "show", alloc["uuid"])
        self.assertEqual(renamed, updated["name"])
        self.assertEqual({"x": "y"}, updated["extra"])
        self.target.openstack("baremetal", "allocation", "unset", renamed,
                              "--name")
        self.assertEqual(None, self.target.allocation(alloc["uuid"])["name"])

        self.target.openstack("baremetal", "node", "deploy", node_name)
        node = self.target.wait_node(node_name, base.settled("active"))
        self.assertEqual(alloc["uuid"], node["allocation_uuid"])
        self.target.openstack("baremetal", "node", "undeploy", node_name)
        node = self.target.wait_node(node_name, base.settled("available"))
        self.assertEqual(None, node["allocation_uuid"])
        self.assertEqual(None, node["instance_uuid"])
        gone = self.target.openstack("baremetal", "allocation", "show",
                                     alloc["uuid"], check=False)
        self.assertEqual(1, gone.returncode)
        self.assertIn(f"Allocation {alloc['uuid']} could not be found. "
                      "(HTTP 404)", gone.stderr)

    def test_failed_allocation_and_delete(self) -> None:
        """``--wait`` reports the failure with last_error; delete works."""
        rc = targets.unique("rc")
        name = targets.unique("alloc")
        proc = self.target.openstack(
            "baremetal", "allocation", "create", "--resource-class", rc,
            "--name", name, "--wait", "60", check=False)
        self.assertEqual(1, proc.returncode, proc.stdout)
        self.assertIn("failed", proc.stderr)
        self.assertIn(f"no available nodes match the resource class {rc}",
                      proc.stderr)
        shown = self.os_json("allocation", "show", name)
        self.assertEqual("error", shown["state"])
        self.assertIn(rc, shown["last_error"])
        self.assertEqual([shown["uuid"]], [a["uuid"] for a in self.os_json(
            "allocation", "list", "--resource-class", rc, "--state",
            "error")])
        deleted = self.target.openstack("baremetal", "allocation", "delete",
                                        name)
        self.assertIn(f"Deleted allocation {name}", deleted.stdout)
        missing = self.target.openstack("baremetal", "allocation", "delete",
                                        name, check=False)
        self.assertEqual(1, missing.returncode)
        self.assertIn(f"Allocation {name} could not be found. (HTTP 404)",
                      missing.stderr)

    def test_owner_backfill_and_paging_options(self) -> None:
        """--owner, --node (backfill), --limit/--sort, old API versions."""
        rc, nodes = self.enroll(2, owner="cli-owner")
        owned = self.os_json("allocation", "create", "--resource-class", rc,
                             "--owner", "cli-owner", "--candidate-node",
                             nodes[0]["name"], "--wait", "60")
        self.assertEqual("cli-owner", owned["owner"])
        self.assertEqual([nodes[0]["uuid"]], owned["candidate_nodes"])
        self.assertEqual([owned["uuid"]], [a["uuid"] for a in self.os_json(
            "allocation", "list", "--owner", "cli-owner",
            "--resource-class", rc)])

        self.deploy(nodes[1]["uuid"])
        backfilled = self.os_json("allocation", "create", "--node",
                                  nodes[1]["name"], "--name",
                                  f"{rc}-z")
        self.assertEqual("active", backfilled["state"])
        self.assertEqual(nodes[1]["uuid"], backfilled["node_uuid"])
        self.assertEqual(rc, backfilled["resource_class"])

        self.target.openstack("baremetal", "allocation", "set",
                              owned["uuid"], "--name", f"{rc}-a")
        # ironicclient 6.3 does not send --sort for allocations, so the
        # server's default order (creation) decides which one --limit keeps.
        page = self.os_json("allocation", "list", "--resource-class", rc,
                            "--limit", "1", "--sort", "name:desc")
        self.assertEqual([f"{rc}-a"], [a["name"] for a in page])

        old = self.target.openstack(
            "--os-baremetal-api-version", "1.51", "baremetal", "allocation",
            "list", check=False)
        self.assertEqual(1, old.returncode)
        self.assertIn("The API version does not allow allocations "
                      "(HTTP 404)", old.stderr)
        self.undeploy(nodes[1]["uuid"])

    def test_standalone_baremetal_command(self) -> None:
        """python-ironicclient's own ``baremetal`` entry point works too."""
        rc, (node,) = self.enroll(1)
        proc = self.target.baremetal(
            "allocation", "create", "--resource-class", rc, "--wait", "60",
            "-f", "json")
        alloc = json.loads(proc.stdout)
        self.assertEqual(node["uuid"], alloc["node_uuid"])
        listed = json.loads(self.target.baremetal(
            "allocation", "list", "--node", node["name"], "-f", "json")
            .stdout)
        self.assertEqual([alloc["uuid"]], [a["uuid"] for a in listed])
        self.target.baremetal("allocation", "delete", alloc["uuid"])
        self.assertReleased(node["uuid"], alloc["uuid"])


globals().update(targets.per_target(IronicClientCli))
