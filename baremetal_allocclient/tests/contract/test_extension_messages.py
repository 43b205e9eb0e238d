"""``capacity`` and ``explain`` on a server with and without the
reference server's extensions (real Ironic has none): an answer, or one
line saying what the server lacks, never a raw 404."""

from __future__ import annotations

from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.tests.functional.cli import clirunner


class ExtensionMessages(base.ContractMixin):
    """capacity and explain through ``baremetal-alloc``."""

    def alloc(self, *args: str) -> clirunner.CliResult:
        return clirunner.run(clirunner.STANDALONE, self.target.endpoint,
                             *args)

    def test_capacity(self) -> None:
        rc, _nodes = self.enroll(1)
        result = self.alloc("capacity", "--resource-class", rc, "-f", "json")
        if self.serves_allocations:
            self.assertEqual(0, result.returncode, repr(result))
            self.assertEqual(1, result.json()[0]["free"])
            return
        self.assertEqual(1, result.returncode, repr(result))
        self.assertEqual(
            [f"The server at {self.target.endpoint} has no allocation "
             "capacity (/v1/allocation_capacity is an extension of "
             "baremetal-alloc-server; Ironic does not offer it)"],
            result.stderr.strip().splitlines())

    def test_explain_is_computed_on_the_client(self) -> None:
        rc, _nodes = self.enroll(2)
        result = self.alloc("explain", "--resource-class", rc, "-f", "json")
        self.assertEqual(0, result.returncode, repr(result))
        self.assertIn("2", result.stdout)


globals().update(targets.per_target(ExtensionMessages))
