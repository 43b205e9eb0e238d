"""The SDK's promises to a script, in real processes.

``allocate(timeout=N)`` ends within N + 0.5 s of its first request on a
slow server, releases its allocation on Ctrl-C and SIGTERM, and one lost
answer to a create does not make a second allocation.  A user's script
type checks with ``mypy --strict`` against the editable install.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import testtools

from baremetal_allocclient.tests.fixtures.inprocess import InProcessServer
from baremetal_allocclient.tests.functional.cli import _wire

SCRIPT = textwrap.dedent("""\
    import sys, time
    from baremetal_allocclient import exceptions
    from baremetal_allocclient.v1 import Client

    with Client.from_endpoint(sys.argv[1]) as client:
        try:
            client.allocate(sys.argv[2], timeout=float(sys.argv[3]))
        except exceptions.WaitTimeout as exc:
            print("timeout", time.monotonic(), exc, flush=True)
            sys.exit(1)
""")


class TestSdkPromises(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.server = InProcessServer()
        self.addCleanup(self.server.cleanup)
        self.server.start("--allocation-delay", "20")
        self.proxy = _wire.WireProxy(self.server.port)
        self.addCleanup(self.proxy.close)

    def allocations(self) -> list[object]:
        return list(self.server.request("GET", "/v1/allocations")
                    .json()["allocations"])

    def start(self, timeout: float) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", SCRIPT, self.proxy.endpoint, "rc",
             str(timeout)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    def first_request(self, proc: subprocess.Popen[str]) -> float:
        for _ in range(3000):
            if self.proxy.first_request_at is not None:
                return self.proxy.first_request_at
            self.assertIsNone(proc.poll())
            time.sleep(0.005)
        raise AssertionError("no request")

    def test_timeout_is_the_whole_budget(self) -> None:
        proc = self.start(3)
        first = self.first_request(proc)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(1, proc.returncode, err)
        raised_at = float(out.split()[1])
        self.assertLessEqual(raised_at - first, 3 + 0.5, out)
        self.assertGreaterEqual(raised_at - first, 3 - 0.5, out)
        self.assertEqual([], self.allocations())

    def _interrupt(self, signum: int, expected: int) -> None:
        proc = self.start(60)
        first = self.first_request(proc)
        time.sleep(max(0.0, first + 3 - time.monotonic()))
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(expected, proc.returncode, err)
        self.assertEqual([], self.allocations(), err)

    def test_ctrl_c_releases(self) -> None:
        self._interrupt(signal.SIGINT, -signal.SIGINT)

    def test_sigterm_releases_then_terminates(self) -> None:
        self._interrupt(signal.SIGTERM, -signal.SIGTERM)


class TestTyping(testtools.TestCase):

    def test_mypy_strict_on_a_user_script(self) -> None:
        """py.typed is found through the editable install of .venv."""
        with tempfile.TemporaryDirectory() as workdir:
            path = os.path.join(workdir, "reserve.py")
            with open(path, "w") as script:
                script.write(textwrap.dedent("""\
                    from baremetal_allocclient.v1 import Allocation, Client

                    def reserve(url: str) -> str | None:
                        with Client.from_endpoint(url) as client:
                            found: Allocation = client.allocate(
                                "baremetal", timeout=30)
                            return found.node_uuid
                    """))
            proc = subprocess.run(
                [sys.executable, "-m", "mypy", "--strict",
                 "--no-incremental", path],
                capture_output=True, text=True, cwd=workdir, timeout=300,
                check=False)
        self.assertEqual(0, proc.returncode, proc.stdout + proc.stderr)
        self.assertIn("Success", proc.stdout)
