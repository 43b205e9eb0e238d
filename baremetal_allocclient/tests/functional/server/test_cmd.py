"""The ``baremetal-alloc-server`` command line."""

from __future__ import annotations

import json
import os
import subprocess

import testtools

from baremetal_allocclient.server.db.engine import head_revision
from baremetal_allocclient.tests.fixtures.launcher import (
    SERVER,
    ServerProcess,
    run_cli,
)
from baremetal_allocclient.tests.fixtures.processes import free_port

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))
EXAMPLE = os.path.join(_REPO, "examples", "inventory.yaml")


class CommandTests(testtools.TestCase):
    """Schema handling, serve refusal and enroll."""

    def setUp(self) -> None:
        super().setUp()
        self.server = ServerProcess()
        self.addCleanup(self.server.cleanup)

    def test_serve_refuses_out_of_date_schema(self) -> None:
        result = subprocess.run(
            [SERVER, "serve", "--port", str(free_port()), "--db",
             self.server.db_url],
            capture_output=True, text=True, timeout=60, check=False,
        )
        self.assertEqual(1, result.returncode)
        self.assertIn("db upgrade", result.stderr)
        self.assertNotIn("Traceback", result.stderr)

    def test_serve_upgrade_flag(self) -> None:
        self.server.start("--upgrade")
        resp = self.server.request("GET", "/v1/nodes")
        self.assertEqual(200, resp.status_code)

    def test_db_upgrade_is_idempotent(self) -> None:
        for _ in range(2):
            result = run_cli("db", "upgrade", "--db", self.server.db_url)
            self.assertEqual(0, result.returncode, result.stderr)
            self.assertIn(head_revision(), result.stdout)

    def test_enroll_yaml_makes_nodes_allocatable(self) -> None:
        self.server.upgrade()
        result = run_cli("enroll", "--db", self.server.db_url, EXAMPLE)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertIn("Enrolled 4 node(s)", result.stdout)
        again = run_cli("enroll", "--db", self.server.db_url, EXAMPLE)
        self.assertIn("Enrolled 0 node(s), skipped 4", again.stdout)
        self.server.start()
        node = self.server.request("GET", "/v1/nodes/node-0").json()
        self.assertEqual("available", node["provision_state"])
        self.assertEqual("power off", node["power_state"])
        self.assertEqual(["CUSTOM_GPU", "HW_CPU_X86_VMX"], node["traits"])
        self.assertEqual(32, node["properties"]["cpus"])
        resp = self.server.request(
            "POST", "/v1/allocations",
            {"resource_class": "baremetal",
             "traits": ["CUSTOM_GPU", "HW_CPU_X86_VMX"]})
        alloc = self.server.wait_allocation(resp.json()["uuid"])
        self.assertEqual(node["uuid"], alloc["node_uuid"])

    def test_enroll_json(self) -> None:
        self.server.upgrade()
        path = os.path.join(self.server.tmpdir, "inv.json")
        with open(path, "w", encoding="utf-8") as stream:
            json.dump([{"name": "j-0", "driver": "fake-hardware",
                        "resource_class": "rc", "owner": "p"}], stream)
        result = run_cli("enroll", "--db", self.server.db_url, path)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertIn("Enrolled 1 node(s)", result.stdout)

    def test_enroll_creates_the_ports_of_nics(self) -> None:
        self.server.upgrade()
        path = os.path.join(self.server.tmpdir, "nics.json")
        inventory = {
            "n-0": {"driver": "fake-hardware", "resource_class": "rc",
                    "nics": [{"mac": "00:01:02:03:04:05"},
                             {"mac": "00:01:02:03:04:06",
                              "extra": {"bond": "b0"},
                              "pxe_enabled": False}]},
            "n-1": {"nics": [{"mac": "00:01:02:03:04:07"}]},
        }
        with open(path, "w", encoding="utf-8") as stream:
            json.dump(inventory, stream)
        result = run_cli("enroll", "--db", self.server.db_url, path)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertIn("Enrolled 2 node(s)", result.stdout)
        # Enrolling again skips the nodes and so their NICs.
        again = run_cli("enroll", "--db", self.server.db_url, path)
        self.assertEqual(0, again.returncode, again.stderr)
        # A NIC whose MAC address a port has refuses the whole inventory.
        clash = os.path.join(self.server.tmpdir, "clash.yaml")
        with open(clash, "w", encoding="utf-8") as stream:
            stream.write("n-2: {}\nn-3: {nics: [{mac: '00:01:02:03:04:07'}]}"
                         "\n")
        refused = run_cli("enroll", "--db", self.server.db_url, clash)
        self.assertEqual(1, refused.returncode)
        self.assertIn("a port with MAC address 00:01:02:03:04:07 already "
                      "exists", refused.stderr)
        self.server.start()
        ports = self.server.request("GET", "/v1/ports/detail").json()["ports"]
        node = self.server.request("GET", "/v1/nodes/n-0").json()
        by_mac = {p["address"]: p for p in ports}
        self.assertEqual(["00:01:02:03:04:05", "00:01:02:03:04:06",
                          "00:01:02:03:04:07"], sorted(by_mac))
        second = by_mac["00:01:02:03:04:06"]
        self.assertEqual(node["uuid"], second["node_uuid"])
        self.assertEqual({"bond": "b0"}, second["extra"])
        self.assertIs(False, second["pxe_enabled"])
        self.assertIs(True, by_mac["00:01:02:03:04:05"]["pxe_enabled"])
        self.assertEqual(404, self.server.request(
            "GET", "/v1/nodes/n-2").status_code)

    def test_enroll_rejects_bad_inventories(self) -> None:
        self.server.upgrade()
        cases = [
            ("bad.yaml", "node-0: {driver: ipmi}\n", "not supported"),
            ("bad2.yaml", "node-0: {colour: red}\n", "unknown key"),
            ("bad3.json", "{not json", "bad3.json"),
            ("bad4.yaml", "- name: 'bad name'\n", "invalid node name"),
            ("bad5.yaml", "n: {traits: [lower]}\n", "traits"),
        ]
        for name, text, words in cases:
            path = os.path.join(self.server.tmpdir, name)
            with open(path, "w", encoding="utf-8") as stream:
                stream.write(text)
            result = run_cli("enroll", "--db", self.server.db_url, path)
            self.assertEqual(1, result.returncode, name)
            self.assertIn(words, result.stderr, name)
            self.assertNotIn("Traceback", result.stderr, name)
        missing = run_cli("enroll", "--db", self.server.db_url,
                          os.path.join(self.server.tmpdir, "missing.yaml"))
        self.assertEqual(1, missing.returncode)
        self.assertIn("No such file", missing.stderr)
