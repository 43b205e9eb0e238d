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


def run_and_check(case: testtools.TestCase, *args: str,
                  at_least: int) -> None:
    """Run ``tools/openstacksdk-functional`` with ``args`` and insist
    that at least ``at_least`` tests passed and none failed."""
    result = subprocess.run(
        [sys.executable, os.path.abspath(_SCRIPT), *args],
        capture_output=True, text=True, timeout=900, check=False)
    tail = result.stdout[-4000:] + result.stderr[-2000:]
    case.assertEqual(0, result.returncode, tail)
    summary = result.stdout.strip().splitlines()[-1]
    case.assertRegex(summary, r"^\d+ passed", tail)
    case.assertIsNone(re.search(r"\b(failed|error|errors)\b", summary),
                      tail)
    case.assertGreaterEqual(int(summary.split()[0]), at_least, tail)


class OpenStackSdkFunctionalTests(testtools.TestCase):

    def test_node_allocation_and_port_files_pass(self) -> None:
        run_and_check(self, at_least=40)
