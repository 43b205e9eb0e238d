"""Leases with the real ``baremetal-alloc`` and ``openstack baremetal
allocation`` executables, against the reference server and real Ironic:
``create --lease``, the ``lease_expires_at`` column, ``renew``, ``list
--expired`` and ``expire`` as a cron job runs it (quiet when there is
nothing to do, a line per action, exit code 1 on failure)."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from baremetal_allocclient import leases
from baremetal_allocclient.tests.fixtures.processes import free_port
from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.tests.functional.cli import clirunner


class LeaseCliTests:
    """One lease's life through the command line."""

    frontend: ClassVar[str]
    target: ClassVar[targets.Target]

    assertEqual: Any
    assertIn: Any
    assertGreater: Any
    assertNotIn: Any
    addCleanup: Any
    fail: Any

    def cli(self, *args: str) -> clirunner.CliResult:
        return clirunner.run(self.frontend, self.target.endpoint, *args)

    def marks(self, uuid: str) -> dict[str, Any]:
        """The allocation's lease as the SDK reads it (the reference
        server's field, or the keys of ``extra`` on real Ironic)."""
        from baremetal_allocclient import marks

        return marks.of(self.target.expect(
            200, "GET", f"/v1/allocations/{uuid}",
            headers={"X-Baremetal-Alloc-Extensions": "leases"}))

    def ok(self, *args: str) -> clirunner.CliResult:
        result = self.cli(*args)
        if result.returncode != 0:
            self.fail(f"expected success: {result!r}")
        self.assertNotIn("Traceback", result.stderr)
        return result

    def create(self, rc: str, lease: str) -> dict[str, Any]:
        for _attempt in range(3):
            result = self.cli("create", "--resource-class", rc, "--lease",
                              lease, "--wait", "60", "-f", "json",
                              "-c", "uuid", "-c", "node_uuid", "-c", "extra",
                              "-c", "lease_expires_at")
            if result.returncode == 0 or "database is locked" not in (
                    result.stderr + result.stdout):
                break
            for alloc in targets.iter_pages(
                    self.target, "/v1/allocations", "allocations",
                    {"resource_class": rc, "state": "error"}):
                self.target.request("DELETE",
                                    f"/v1/allocations/{alloc['uuid']}")
        if result.returncode != 0:
            self.fail(f"expected success: {result!r}")
        made: dict[str, Any] = result.json()
        self.addCleanup(self.target.request, "DELETE",
                        f"/v1/allocations/{made['uuid']}")
        return made

    def test_lease_life_cycle(self) -> None:
        rc = targets.unique("rc-lease")
        self.target.make_nodes(2, rc)
        bad = self.cli("create", "--resource-class", rc, "--lease", "2x")
        self.assertEqual(2, bad.returncode, repr(bad))
        self.assertIn("90s, 30m, 2h, 1d or 1h30m", bad.stderr)
        # Nothing to do: no output at all (cron mails nothing).
        quiet = self.ok("expire", "--resource-class", rc)
        self.assertEqual(("", ""), (quiet.stdout, quiet.stderr))

        kept = self.create(rc, "1h")
        short = self.create(rc, "1s")
        self.assertEqual(self.marks(short["uuid"])[leases.EXPIRES_KEY],
                         short["lease_expires_at"])
        # extra as written on the reference server (the lease is a field
        # of its own), the SDK's string keys on real Ironic.
        self.assertEqual(self.target.name != "reference",
                         leases.EXPIRES_KEY in short["extra"])
        listed = self.ok("list", "--resource-class", rc, "-f", "json",
                         "-c", "uuid", "-c", "lease_expires_at").json()
        self.assertEqual(
            {kept["uuid"]: kept["lease_expires_at"],
             short["uuid"]: short["lease_expires_at"]},
            {row["uuid"]: row["lease_expires_at"] for row in listed})
        end = leases.parse_timestamp(short["lease_expires_at"])
        time.sleep(max(0.0, (end - leases.utcnow()).total_seconds() + 0.2))

        expired = self.ok("list", "--resource-class", rc, "--expired",
                          "-f", "value", "-c", "uuid")
        self.assertEqual([short["uuid"]], expired.lines())
        renewed = self.ok("renew", kept["uuid"], "--lease", "2h",
                          "-f", "json").json()
        self.assertGreater(leases.parse_timestamp(
            renewed["lease_expires_at"]), leases.parse_timestamp(
                kept["lease_expires_at"]))
        self.assertEqual("2h", self.marks(renewed["uuid"])[
            leases.DURATION_KEY])

        dry = self.ok("expire", "--resource-class", rc, "--dry-run")
        self.assertEqual(1, len(dry.lines()), repr(dry))
        self.assertIn(f"Would release allocation {short['uuid']}",
                      dry.stdout)
        self.target.expect(200, "GET", f"/v1/allocations/{short['uuid']}")

        done = self.ok("expire", "--resource-class", rc)
        self.assertEqual(1, len(done.lines()), repr(done))
        self.assertIn(f"Released allocation {short['uuid']} of node "
                      f"{short['node_uuid']}", done.stdout)
        self.target.expect(404, "GET", f"/v1/allocations/{short['uuid']}")
        self.target.expect(200, "GET", f"/v1/allocations/{kept['uuid']}")
        again = self.ok("expire", "--resource-class", rc)
        self.assertEqual("", again.stdout)

    def test_failures_exit_1_and_usage_errors_2(self) -> None:
        down = clirunner.run(self.frontend, f"http://127.0.0.1:"
                             f"{free_port()}", "expire")
        self.assertEqual(1, down.returncode, repr(down))
        self.assertNotIn("Traceback", down.stderr)
        missing = self.cli("renew", targets.unique("none"), "--lease", "1h")
        self.assertEqual(1, missing.returncode, repr(missing))
        for args in (("renew", "x"), ("renew", "x", "--lease", "0s"),
                     ("expire", "--dry-run", "extra")):
            usage = self.cli(*args)
            self.assertEqual(2, usage.returncode, repr(usage))


class StandaloneLeaseCli(LeaseCliTests):
    frontend = clirunner.STANDALONE


class OpenstackLeaseCli(LeaseCliTests):
    frontend = clirunner.OPENSTACK


globals().update(targets.per_target(StandaloneLeaseCli))
globals().update(targets.per_target(OpenstackLeaseCli))
