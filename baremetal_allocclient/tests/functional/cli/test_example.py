"""examples/reserve-node.sh against both targets."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Any, ClassVar

import testtools

from baremetal_allocclient.tests.fixtures.inprocess import InProcessServer
from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.tests.functional.cli import clirunner

SCRIPT = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))),
    "examples", "reserve-node.sh",
)
TRAIT = "CUSTOM_EXAMPLE"


class ReserveNodeExample:
    """The shell example reserves, hands over and always releases."""

    target: ClassVar[targets.Target]
    rc: ClassVar[str]
    node: ClassVar[str]
    assertEqual: Any
    assertIn: Any
    assertIsNone: Any

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        cls.rc = targets.unique("rc-example")
        cls.node = cls.target.make_nodes(1, cls.rc, traits=[TRAIT])[0]["uuid"]

    def run_script(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = clirunner.clean_env({
            "OS_ENDPOINT": self.target.endpoint,
            "PATH": clirunner.BIN_DIR + os.pathsep + os.environ["PATH"],
        })
        return subprocess.run(["sh", SCRIPT, *args], capture_output=True,
                              text=True, env=env, timeout=300, check=False)

    def allocations_of_class(self, resource_class: str) -> list[Any]:
        body = self.target.expect(
            200, "GET", f"/v1/allocations?resource_class={resource_class}")
        allocations: list[Any] = body["allocations"]
        return allocations

    def test_prints_uuid_and_releases(self) -> None:
        result = self.run_script("-t", TRAIT, "-w", "60", self.rc)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual(self.node, result.stdout.strip())
        self.assertIn(f"released node {self.node}", result.stderr)
        self.assertIsNone(self.target.node(self.node)["allocation_uuid"])

    def test_command_sees_node_and_its_status_is_kept(self) -> None:
        result = self.run_script(
            self.rc, "sh", "-c", 'echo "got $NODE_UUID"; exit 3')
        self.assertEqual(3, result.returncode, result.stderr)
        self.assertEqual(f"got {self.node}", result.stdout.strip())
        self.assertEqual([], self.allocations_of_class(self.rc))

    def test_no_matching_node_fails_cleanly(self) -> None:
        result = self.run_script("-t", "CUSTOM_NOBODY_HAS_THIS", "-w", "60",
                                 self.rc)
        self.assertEqual(1, result.returncode, result.stderr)
        self.assertIn("could not reserve", result.stderr)
        self.assertIn("failed", result.stderr)  # the CLI's last_error line
        self.assertEqual([], self.allocations_of_class(self.rc))

    def test_usage_error(self) -> None:
        self.assertEqual(2, self.run_script().returncode)

    def test_sigterm_while_the_command_runs_releases(self) -> None:
        # sh runs its TERM trap when the foreground command ends; a command
        # that ended by itself would exit 0, not 143.
        proc = start_script(self.target.endpoint, self.rc, "sleep", "10")
        assert proc.stderr is not None
        line = proc.stderr.readline()
        self.assertIn("reserved node", line)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(143, proc.returncode, err)
        self.assertIn(f"released node {self.node}", err)
        self.assertEqual([], self.allocations_of_class(self.rc))


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_script(endpoint: str, *args: str) -> subprocess.Popen[str]:
    env = clirunner.clean_env({
        "OS_ENDPOINT": endpoint,
        "PATH": clirunner.BIN_DIR + os.pathsep + os.environ["PATH"],
    })
    return subprocess.Popen(["sh", SCRIPT, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=_default_sigint)


class TestReserveNodeInterrupted(testtools.TestCase):
    """A signal while the node is still being reserved (allocations
    held 8 s by a slow server) leaves no allocation behind."""

    def setUp(self) -> None:
        super().setUp()
        self.server = InProcessServer()
        self.addCleanup(self.server.cleanup)
        self.server.start("--allocation-delay", "8")

    def _interrupt(self, signum: int, after: float) -> None:
        proc = start_script(self.server.endpoint, "rc-slow")
        time.sleep(after)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(128 + signum, proc.returncode, err)
        left = self.server.request("GET", "/v1/allocations").json()
        self.assertEqual([], left["allocations"], err)

    def test_sigint_while_reserving(self) -> None:
        self._interrupt(signal.SIGINT, 3.0)

    def test_sigterm_while_reserving(self) -> None:
        self._interrupt(signal.SIGTERM, 3.0)


globals().update(targets.per_target(ReserveNodeExample))
