"""openstacksdk's own baremetal functional tests pass against the
reference server.

Runs ``tools/openstacksdk-functional`` (the node, allocation and port
files shipped in the openstacksdk wheel, against a fresh server) and
insists that none fails or errors.  About 80 s, most of it
openstacksdk's own 2-second polling.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import testtools

_SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..",
                       "tools", "openstacksdk-functional")


class OpenStackSdkFunctionalTests(testtools.TestCase):

    def test_node_allocation_and_port_files_pass(self) -> None:
        result = subprocess.run(
            [sys.executable, os.path.abspath(_SCRIPT)],
            capture_output=True, text=True, timeout=900, check=False)
        tail = result.stdout[-4000:] + result.stderr[-2000:]
        self.assertEqual(0, result.returncode, tail)
        summary = result.stdout.strip().splitlines()[-1]
        self.assertRegex(summary, r"^\d+ passed", tail)
        self.assertIsNone(re.search(r"\b(failed|error|errors)\b", summary),
                          tail)
        self.assertGreaterEqual(int(summary.split()[0]), 40, tail)
