"""Each message a script or its user reads, from the real executables.

The rows of issue 14's table: every one is a command line and the text
(and exit status) it must now produce.
"""

from __future__ import annotations

import json
import os

import testtools

from baremetal_allocclient.tests.fixtures import preforked
from baremetal_allocclient.tests.fixtures.processes import free_port
from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.tests.functional.cli import clirunner


class TestMessages(testtools.TestCase):

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.target = targets.reference_target()

    def cli(self, *args: str, endpoint: str | None = None,
            frontend: str = clirunner.STANDALONE) -> clirunner.CliResult:
        return clirunner.run(frontend, endpoint or self.target.endpoint,
                             *args)

    def expect(self, code: int, result: clirunner.CliResult) -> str:
        self.assertEqual(code, result.returncode, result)
        self.assertNotIn("Traceback", result.stderr)
        return result.stdout + result.stderr

    def test_trait_rule_is_explained(self) -> None:
        text = self.expect(2, self.cli("create", "--resource-class", "rc",
                                       "--trait", "gpu"))
        self.assertIn("'gpu' is not valid: a trait is a standard trait "
                      "from os-traits", text)
        self.assertIn("CUSTOM_ followed by capital letters", text)

    def test_delete_ignore_missing_does_not_claim_a_delete(self) -> None:
        text = self.expect(0, self.cli("delete", "nope", "--ignore-missing"))
        self.assertEqual("Allocation nope not found; nothing to delete\n",
                         text)

    def test_list_state_is_validated(self) -> None:
        text = self.expect(2, self.cli("list", "--state", "bogus"))
        self.assertIn("invalid state 'bogus'; choose from allocating, "
                      "active, error", text)

    def test_delete_on_failure_needs_wait(self) -> None:
        text = self.expect(2, self.cli("create", "--resource-class", "rc",
                                       "--delete-on-failure"))
        self.assertIn("--delete-on-failure needs --wait", text)
        self.assertEqual([], list(targets.iter_pages(
            self.target, "/v1/allocations", "allocations",
            {"resource_class": "rc"})))

    def test_wrong_endpoint_path_names_the_url(self) -> None:
        url = self.target.endpoint + "/wrongpath"
        for frontend in (clirunner.STANDALONE, clirunner.OPENSTACK):
            text = self.expect(1, self.cli("list", endpoint=url,
                                           frontend=frontend))
            self.assertIn(f"(HTTP 404 for GET {url}/v1/allocations)", text)

    def test_refused_connection_names_the_url(self) -> None:
        url = f"http://127.0.0.1:{free_port()}"
        text = self.expect(1, self.cli("list", endpoint=url))
        self.assertIn(f"Unable to reach the bare metal API at {url}: "
                      "Connection refused", text)

    def test_capacity_keys_are_snake_case(self) -> None:
        rc = targets.unique("rc-cap")
        self.target.make_nodes(1, rc)
        result = self.cli("capacity", "--resource-class", rc, "-f", "json")
        self.expect(0, result)
        self.assertEqual([{"resource_class": rc, "total": 1, "allocated": 0,
                           "reserved": 0, "reserved_by_reason": {},
                           "free": 1}], json.loads(result.stdout))

    def test_multi_key_sort_as_ironicclient(self) -> None:
        rc = targets.unique("rc-sort")
        for name in ("b-sort", "a-sort", "c-sort"):
            self.target.expect(201, "POST", "/v1/allocations",
                               {"resource_class": rc, "name": name})
        self.addCleanup(lambda: [
            self.target.request("DELETE", f"/v1/allocations/{n}")
            for n in ("a-sort", "b-sort", "c-sort")])
        result = self.cli("list", "--resource-class", rc, "--sort",
                          "name:desc,state", "-f", "value", "-c", "name")
        self.expect(0, result)
        self.assertEqual(["c-sort", "b-sort", "a-sort"], result.lines())

    def test_plugin_commands_in_command_list(self) -> None:
        proc = preforked.run(
            [os.path.join(clirunner.BIN_DIR, "openstack"), "command",
             "list", "--group", "openstack.extension", "-f", "json"],
            env=clirunner.clean_env(), timeout=120)
        self.assertEqual(0, proc.returncode, proc.stderr)
        listed = {name for group in json.loads(proc.stdout)
                  for name in group["Commands"]}
        for verb in ("create", "list", "get", "show", "delete", "set",
                     "unset", "capacity", "explain", "renew", "expire"):
            self.assertIn(f"baremetal allocation {verb}", listed)
        self.assertNotIn("duplicate", proc.stderr)
