"""The Lifecycle page's CI-lab example, run as the page includes it.

``doc/source/examples/lifecycle/ci-job.sh`` reserves a group with a lease,
runs a job with the nodes and releases them; the page says what happens
when the job dies.  These tests run the script with ``sh`` against a
reference server started by the page's ``serve --expire-leases 1``
command: once to the end, once killed with SIGKILL in the middle of its
job (the script's trap cannot run), when the server's lease expiry must
give the nodes back.
"""

from __future__ import annotations

import datetime
import os
import re
import signal
import subprocess
import time

from baremetal_allocclient.tests.functional.docs.test_examples import (
    EXAMPLES,
    UUID_RE,
    _DocsServer,
)

CI_JOB = os.path.join(EXAMPLES, "lifecycle", "ci-job.sh")
#: ``serve --expire-leases 1`` in lifecycle/serve.sh.
EXPIRY_INTERVAL = 1.0
#: Margin over the expiry interval on a shared two-core machine.
MARGIN = 5.0
BAREMETAL_NODES = ("node-0", "node-1", "node-2", "node-3")


class LifecycleExampleTest(_DocsServer):
    """ci-job.sh against ``serve --expire-leases 1``."""

    SERVE = "lifecycle/serve.sh"

    def ci_job(self, *args: str, **popen: object) -> subprocess.Popen[str]:
        return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
            ["sh", CI_JOB, *args], cwd=self.workdir,
            env={**self.env, **self.client_env}, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, **popen)

    def members(self) -> list[dict[str, object]]:
        allocations = self.api("/v1/allocations", "groups, leases")[
            "allocations"]
        return [a for a in allocations
                if str(a["name"] or "").startswith("ci-")]

    def test_job_runs_with_the_group_and_releases_it(self) -> None:
        # The job sees its nodes, reserved as a group with a lease, and
        # fails with a status of its own: the script keeps that status.
        job = ('echo "$NODE_UUIDS"; baremetal-alloc list --group "$GROUP" '
               '-f value -c name -c state -c lease_expires_at >&2; exit 3')
        proc = self.ci_job("3", "baremetal", "1m", "sh", "-c", job)
        out, err = proc.communicate(timeout=120)
        self.assertEqual(3, proc.returncode, err)
        uuids = out.split()
        self.assertEqual(3, len(set(uuids)), out)
        for uuid in uuids:
            self.assertIn(self.nodes[uuid], BAREMETAL_NODES)
        group = f"ci-{proc.pid}"
        listed = re.findall(
            rf"^({group}-[012]) active (\d{{4}}-\S+Z)$", err, re.MULTILINE)
        self.assertEqual([f"{group}-{i}" for i in range(3)],
                         sorted(name for name, _ in listed), err)
        self.assertIn(f"group {group} reserved", err)
        self.assertEqual(3, len(re.findall(
            rf"Deleted allocation {UUID_RE} \(group {group}\)", err)), err)
        self.assertNothingAllocated()

    def test_group_not_reserved_exits_1_and_leaves_nothing(self) -> None:
        proc = self.ci_job("5", "baremetal", "1m", "true")
        out, err = proc.communicate(timeout=120)
        self.assertEqual(1, proc.returncode, err)
        self.assertEqual("", out)
        self.assertIn("Group of 5 not reserved", err)
        self.assertNothingAllocated()

    def start_long_job(self, lease: str) -> subprocess.Popen[str]:
        """ci-job.sh with a job that sleeps, in a process group of its
        own (signalled whole, as a terminal or a CI runner does), once
        the job runs."""
        started = os.path.join(self.workdir, f"job-started-{lease}")
        job = f'echo "$NODE_UUIDS" > {started}.tmp; mv {started}.tmp ' \
              f'{started}; sleep 120'
        proc = self.ci_job("2", "baremetal", lease, "sh", "-c", job,
                           start_new_session=True)
        self.addCleanup(self._kill_group, proc)
        deadline = time.monotonic() + 60
        while not os.path.exists(started):
            self.assertIsNone(proc.poll(), proc.stderr)
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        return proc

    def test_cancelled_job_releases_the_group_at_once(self) -> None:
        proc = self.start_long_job("1h")
        self.assertEqual(2, len(self.members()))
        os.killpg(proc.pid, signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
        self.assertEqual(143, proc.returncode, err)
        self.assertEqual(2, err.count("Deleted allocation"), err)
        self.assertNothingAllocated()

    def test_killed_job_is_released_when_its_lease_ends(self) -> None:
        # SIGKILL, as a CI runner killing a job that timed out does.
        proc = self.start_long_job("5s")
        members = self.members()
        self.assertEqual(2, len(members), members)
        ends = {m["lease"]["expires_at"]  # type: ignore[index]
                for m in members}
        self.assertEqual(1, len(ends), members)
        expires_at = datetime.datetime.fromisoformat(
            str(ends.pop()).replace("Z", "+00:00")).timestamp()

        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        self.assertEqual(-signal.SIGKILL, proc.returncode)
        killed_at = time.time()
        # The trap did not run: the group is still reserved ...
        if killed_at < expires_at - 1:
            self.assertEqual(2, len(self.members()))
        # ... until its lease ends, when the server releases it by itself.
        while self.members():
            self.assertLess(time.time(),
                            expires_at + EXPIRY_INTERVAL + MARGIN,
                            "the expired group was not released")
            time.sleep(0.1)
        self.assertGreaterEqual(time.time(), expires_at,
                                "released before the lease ended")
        self.assertNothingAllocated()
        log = self.server.log_tail(4000)
        for member in members:
            self.assertIn(f"Lease of allocation {member['uuid']} expired",
                          log)

    @staticmethod
    def _kill_group(proc: subprocess.Popen[str]) -> None:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
