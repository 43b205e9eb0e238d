"""``baremetal-alloc complete``: bash completes allocation names and
states, not only commands and options.

The generated script is sourced into a real bash, which is asked for
completions the way bash asks (``COMP_WORDS``, ``COMP_CWORD``); names
come from the reference server through ``OS_ENDPOINT``.
"""

from __future__ import annotations

import os
import subprocess

import testtools

from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.tests.functional.cli import clirunner


class TestCompletion(testtools.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.target = targets.reference_target()
        cls.name = targets.unique("done")
        cls.target.expect(201, "POST", "/v1/allocations", {
            "resource_class": targets.unique("none"), "name": cls.name})
        script = clirunner.run(clirunner.STANDALONE, None, "complete")
        assert script.returncode == 0, script
        cls.script = script.stdout

    def complete(self, *words: str) -> list[str]:
        """What bash offers for the last of ``words``."""
        quoted = " ".join(f"'{w}'" for w in ("baremetal-alloc", *words))
        program = (
            f"{self.script}\n"
            f"COMP_WORDS=({quoted}); COMP_CWORD={len(words)}\n"
            "_baremetal_alloc_values\n"
            'printf "%s\\n" "${COMPREPLY[@]}"\n')
        env = clirunner.clean_env({
            "OS_ENDPOINT": self.target.endpoint,
            "PATH": clirunner.BIN_DIR + os.pathsep + os.environ["PATH"]})
        result = subprocess.run(["bash", "-c", program], capture_output=True,
                                text=True, timeout=120, env=env, check=True)
        return result.stdout.split()

    def test_allocation_names(self) -> None:
        prefix = self.name[:8]
        for verb in ("show", "delete", "renew"):
            self.assertIn(self.name, self.complete(verb, prefix), verb)
        self.assertIn(self.name, self.complete("--os-cloud", "x", "get",
                                               prefix))

    def test_states(self) -> None:
        self.assertEqual(["active", "allocating"],
                         sorted(self.complete("list", "--state", "a")))
        self.assertEqual(["active", "allocating", "error"],
                         sorted(self.complete("list", "--state", "")))
