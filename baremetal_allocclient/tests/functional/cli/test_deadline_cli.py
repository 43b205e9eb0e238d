"""``create --wait N`` keeps its deadline against a frozen server, and
reports as "possibly left" only what may really exist (issue 20, items
3 and 7), with the real ``baremetal-alloc`` executable.

Times are measured from the first request the frozen server saw, as the
budget is promised (interpreter start-up is not part of ``--wait N``).
"""

from __future__ import annotations

import concurrent.futures
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from typing import Any

import testtools

from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)
from baremetal_allocclient.tests.fixtures.processes import clean_env, free_port
from baremetal_allocclient.tests.functional import counting_proxy
from baremetal_allocclient.tests.functional.cli import clirunner
from baremetal_allocclient.tests.functional.frozen_server import (
    DISCOVERY,
    FrozenServer,
)

#: ``--wait`` of the timed runs, and what a loaded machine may add.
WAIT = 5
MARGIN = 1.5
#: A run still going this long after its first request is taken to hang.
HANG = WAIT + 25
MAY_EXIST = "may exist"
#: The forms of ``create`` (each with ``--wait 5``).
RUNS = {
    "plain": (),
    "group": ("--count", "2", "--group", "g"),
    "capacity": ("--wait-for-capacity",),
    "constrained": ("--min-cpus", "4"),
}
LEFT = "allocations left"


def in_parallel(*jobs: Callable[[], Any]) -> list[Any]:
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        return [f.result() for f in [pool.submit(job) for job in jobs]]


def run_cli(endpoint: str, args: Sequence[str]
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        clirunner.argv_for(clirunner.STANDALONE, endpoint, list(args)),
        capture_output=True, text=True, env=clean_env(),
        timeout=120, check=False)


class TestFrozenServer(testtools.TestCase):
    """Each command ends within ``--wait`` against a server that accepts
    connections and never answers."""

    upstream: str | None = None

    def _timed(self, *args: str) -> tuple[float, Any]:
        server = FrozenServer(self.upstream,
                              DISCOVERY if self.upstream else ())
        self.addCleanup(server.close)
        proc = subprocess.Popen(
            clirunner.argv_for(clirunner.STANDALONE, server.endpoint,
                               ["create", "--resource-class", "rc",
                                "--wait", str(WAIT), *args]),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=clean_env())
        started = time.monotonic()
        while proc.poll() is None:
            first = server.first_request_at
            if time.monotonic() - (first or started) > HANG:
                proc.kill()
                proc.communicate()
                raise AssertionError(f"{args}: did not end")
            time.sleep(0.005)
        ended = time.monotonic()
        stdout, stderr = proc.communicate()
        self.assertIsNotNone(server.first_request_at, stderr)
        assert server.first_request_at is not None
        result = (proc.returncode, stdout, stderr, server.requests())
        return ended - server.first_request_at, result

    def _all_timed(self) -> dict[str, Any]:
        """Run each form of ``create`` at once; check its time limit."""
        results = in_parallel(*(lambda a=a: self._timed(*a)
                                for a in RUNS.values()))
        by_name = dict(zip(RUNS, results, strict=True))
        for name, (elapsed, (code, _out, err, seen)) in by_name.items():
            detail = f"{name}: {elapsed:.2f} s, {err!r}, {seen}"
            self.assertEqual(1, code, detail)
            self.assertLessEqual(elapsed, WAIT + MARGIN, detail)
            self.assertGreaterEqual(elapsed, WAIT - 0.5, detail)
            self.assertNotIn("Traceback", err, detail)
        return by_name

    def test_each_command_keeps_its_deadline(self) -> None:
        by_name = self._all_timed()
        # The create of the plain run got no answer: it may exist.
        _elapsed, (_code, _out, err, seen) = by_name["plain"]
        self.assertIn(MAY_EXIST, err)
        self.assertIn(LEFT, err)
        # The others never got past the discovery: nothing was created,
        # and the error says what got no answer, in one line.
        for name in ("group", "capacity", "constrained"):
            _elapsed, (_code, _out, err, seen) = by_name[name]
            detail = f"{name}: {err!r}, {seen}"
            self.assertNotIn(MAY_EXIST, err, detail)
            self.assertNotIn(LEFT, err, detail)
            self.assertEqual(1, len(err.strip().splitlines()), detail)
            self.assertIn("/v1 within the time limit", err, detail)
            self.assertFalse([s for s in seen if s.startswith("POST")],
                             detail)


class TestFrozenAfterDiscovery(TestFrozenServer):
    """The discovery is answered (by a real reference server, which
    offers every extension), then nothing: each create's outcome is
    unknown, so each is reported as possibly left."""

    reference: InProcessServer

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.reference = serve_for_class(cls)
        cls.upstream = cls.reference.endpoint

    def test_each_command_keeps_its_deadline(self) -> None:
        by_name = self._all_timed()
        for name, (_elapsed, (_code, _out, err, seen)) in by_name.items():
            detail = f"{name}: {err!r}, {seen}"
            posts = [s for s in seen if s.startswith("POST")]
            self.assertEqual(1, len(posts), detail)
            if name == "group":
                # Its members may exist and their clean-up got no
                # answer either: the error names them.
                self.assertIn("could NOT delete", err, detail)
            else:
                self.assertIn(MAY_EXIST, err, detail)
                self.assertIn(LEFT, err, detail)


class TestNothingLeft(testtools.TestCase):
    """Refused creates (409, 400) and a refused connection: no "may
    exist" line, no "allocations left", and no DELETE sent."""

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.reference = serve_for_class(cls)
        cls.reference.make_nodes(1, "rc-cli-left")

    def setUp(self) -> None:
        super().setUp()
        self.proxy = counting_proxy.CountingProxy(self.reference.endpoint)
        self.addCleanup(self.proxy.close)

    def _check_refused(self, *args: str) -> None:
        for extra in ((), ("--delete-on-failure",)):
            self.proxy.take()
            result = run_cli(self.proxy.endpoint,
                             ["create", "--resource-class", "rc-cli-left",
                              "--wait", "30", *args, *extra])
            detail = f"{args + extra}: {result.stderr!r}"
            self.assertEqual(1, result.returncode, detail)
            self.assertNotIn(MAY_EXIST, result.stderr, detail)
            self.assertNotIn(LEFT, result.stderr, detail)
            methods = [m for m, _p, _s in self.proxy.take()]
            self.assertIn("POST", methods, detail)
            self.assertNotIn("DELETE", methods, detail)

    def test_duplicate_name(self) -> None:
        first = run_cli(self.proxy.endpoint,
                        ["create", "--resource-class", "rc-cli-left",
                         "--name", "dup-cli", "--wait", "30"])
        self.assertEqual(0, first.returncode, first.stderr)
        self.addCleanup(self.reference.request, "DELETE",
                        "/v1/allocations/dup-cli")
        self._check_refused("--name", "dup-cli")

    def test_unknown_candidate_node(self) -> None:
        # 400 "Nodes cannot be found" (the CLI itself checks traits).
        self._check_refused("--candidate-node", "no-such-node")

    def test_refused_connection(self) -> None:
        endpoint = f"http://127.0.0.1:{free_port()}"
        result = run_cli(endpoint, ["create", "--resource-class", "rc",
                                    "--wait", "5", "--delete-on-failure"])
        self.assertEqual(1, result.returncode, result.stderr)
        self.assertIn("Connection refused", result.stderr)
        self.assertNotIn(MAY_EXIST, result.stderr)
        self.assertNotIn(LEFT, result.stderr)
        self.assertNotIn("Could not delete", result.stderr)


def _default_sigint() -> None:
    """SIGINT's default action in the child (a background test runner
    may have it ignored, and children inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class TestInterruptedDiscovery(testtools.TestCase):
    """Ctrl-C while the extension discovery has no answer yet: no create
    was sent, so nothing is reported as possibly left."""

    def test_nothing_is_left(self) -> None:
        server = FrozenServer()
        self.addCleanup(server.close)
        proc = subprocess.Popen(
            clirunner.argv_for(clirunner.STANDALONE, server.endpoint,
                               ["create", "--resource-class", "rc",
                                "--wait", "60", "--min-cpus", "4"]),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=clean_env(), preexec_fn=_default_sigint)
        self.addCleanup(proc.kill)
        deadline = time.monotonic() + HANG
        while server.first_request_at is None:
            self.assertLess(time.monotonic(), deadline, "no request came")
            self.assertIsNone(proc.poll(), "ended before any request")
            time.sleep(0.01)
        time.sleep(0.3)  # the discovery is waiting for its answer
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=HANG)
        detail = f"{err!r}, {server.requests()}"
        self.assertEqual(130, proc.returncode, detail)
        self.assertFalse(server.requests("POST"), detail)
        self.assertNotIn(MAY_EXIST, err, detail)
        self.assertNotIn(LEFT, err, detail)
        self.assertNotIn("Traceback", err, detail)
