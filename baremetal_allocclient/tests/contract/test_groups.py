"""All-or-nothing groups on both targets: the reference server reserves
them natively (its groups extension), real Ironic through the SDK's
create-and-roll-back.  The same SDK calls and the same commands of both
command lines must give the same result: every member ``active`` on its
own node, or nothing left."""

from __future__ import annotations

import datetime
import time
from typing import Any

from baremetal_allocclient import exceptions, groups, leases
from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.tests.functional.cli import clirunner
from baremetal_allocclient.v1.client import Client
from baremetal_allocclient.v1.leasing import Outcome

#: Real Ironic's SQLite error under concurrent allocations.
LOCKED = "database is locked"
#: How a group's failure names a member still waiting at its time limit.
STILL_ALLOCATING = "still allocating when the time limit"


class Groups(base.ContractMixin):
    """allocate_group, list/release by group, and the commands."""

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        self.client = Client.from_endpoint(self.target.endpoint)
        self.addCleanup(self.client.close)

    def allocate_group(self, count: int, rc: str, **kwargs: Any
                       ) -> list[Any]:
        """``allocate_group``, again when real Ironic on SQLite failed a
        member with "database is locked" (its transient weakness under
        concurrent allocations, as ``base.allocate`` allows), or left one
        ``allocating``: after logging that error meanwhile, or until the
        time limit (:meth:`left_allocating`; seen in CI with nothing in
        the log's tail).  The group was rolled back, so trying again is
        what a user would do."""
        for attempt in range(3):
            before = self.target.log_mentions(LOCKED)
            try:
                return self.client.allocate_group(count, rc, **kwargs)
            except exceptions.GroupFailed as exc:
                locked = (LOCKED in exc.reason
                          or self.target.log_mentions(LOCKED) > before
                          or self.left_allocating(exc.reason))
                if not locked or attempt == 2:
                    raise
                self.clear_members(kwargs.get("name"), count)
        raise AssertionError("unreachable")

    def clear_members(self, name: str | None, count: int) -> None:
        """Before trying a named group again: its members' names free
        (a member the rollback could not delete while real Ironic was
        locked would make the next attempt a 409 "already exists")."""
        if name is None:
            return
        for index in range(count):
            path = f"/v1/allocations/{name}-{index}"
            deadline = time.monotonic() + 30
            while self.target.request("GET", path).status_code != 404:
                if time.monotonic() > deadline:
                    self.fail(f"{name}-{index} was not deleted in 30 s")
                self.target.request("DELETE", path)
                time.sleep(0.5)

    def create_group(self, frontend: str, *args: str) -> Any:
        """``create ... --group`` through a command line, again when real
        Ironic failed a member with "database is locked", or left one
        ``allocating`` (see :meth:`allocate_group`)."""
        for _attempt in range(3):
            before = self.target.log_mentions(LOCKED)
            created = clirunner.run(frontend, self.target.endpoint,
                                    "create", *args)
            locked = LOCKED in created.stderr or (
                created.returncode != 0
                and (self.target.log_mentions(LOCKED) > before
                     or self.left_allocating(created.stderr)))
            if not locked:
                break
        return created

    def left_allocating(self, failure: str) -> bool:
        """Real Ironic left a member ``allocating`` until the group's
        time limit, a weakness of its conductor (the reference server
        settles every allocation)."""
        return not self.is_reference and STILL_ALLOCATING in failure

    def assertNothingLeft(self, rc: str, nodes: list[dict[str, Any]]
                          ) -> None:
        self.assertEqual([], [a.uuid for a in self.client.list_allocations(
            resource_class=rc)])
        for node in nodes:
            found = self.target.node(node["uuid"])
            self.assertEqual((None, None), (found["allocation_uuid"],
                                            found["instance_uuid"]))

    def test_a_group_is_active_on_distinct_nodes_and_goes_together(
            self) -> None:
        rc, nodes = self.enroll(3)
        name = targets.unique("grp")
        made = self.allocate_group(3, rc, name=name, timeout=120,
                                   extra={"job": "42"})
        self.assertEqual([f"{name}-{i}" for i in range(3)],
                         [a.name for a in made])
        self.assertEqual({n["uuid"] for n in nodes},
                         {a.node_uuid for a in made})
        for allocation in made:
            self.assertReserved(self.target.allocation(str(allocation.uuid)))
            # The group is a field on the reference server, string keys
            # of extra on real Ironic.
            self.assertEqual({"job": "42"} if self.serves_allocations else {
                "job": "42", groups.GROUP_KEY: name, groups.SIZE_KEY: "3"},
                dict(allocation.extra or {}))
            self.assertEqual((name, 3), (groups.group_of(allocation.marks),
                                         groups.size_of(allocation.marks)))
        self.assertEqual([a.uuid for a in made], [
            a.uuid for a in self.client.list_group(name)])
        self.assertEqual(2, len(list(self.client.list_allocations(
            group=name, limit=2))))
        self.assertEqual(sorted(str(a.uuid) for a in made),
                         sorted(self.client.release_group(name)))
        self.assertNothingLeft(rc, nodes)
        self.assertEqual([], self.client.release_group(name))

    def test_a_group_that_cannot_be_whole_leaves_nothing(self) -> None:
        rc, nodes = self.enroll(2)
        for _attempt in range(3):  # see allocate_group
            with self.assertRaises(exceptions.GroupFailed) as ctx:
                self.client.allocate_group(3, rc, name=targets.unique("grp"),
                                           timeout=120)
            if "database is locked" not in ctx.exception.reason:
                break
        self.assertIn("Group of 3 not reserved", str(ctx.exception))
        self.assertEqual((), ctx.exception.left)
        if self.serves_allocations:
            self.assertIn("2 of the 3 nodes needed are available",
                          ctx.exception.reason)
        else:
            # The member that failed is named, with Ironic's last_error.
            failed = ctx.exception.failed
            assert failed is not None
            self.assertIn(f"({failed.name}) failed: Failed to process "
                          f"allocation {failed.uuid}", ctx.exception.reason)
            self.assertRegex(ctx.exception.reason, r"allocation [1-3] of 3")
        self.assertNothingLeft(rc, nodes)

    def test_the_extension_is_advertised_only_by_this_server(
            self) -> None:
        extensions = self.target.expect(200, "GET", "/v1").get(
            "extensions") or {}
        offered = self.serves_allocations
        self.assertEqual(offered, groups.EXTENSION in extensions)
        self.assertEqual(offered, self.client.supports_groups())
        # Without opting in, the path does not exist, as on Ironic.
        response = self.target.request(
            "POST", groups.PATH, {"count": 1, "resource_class": "x"})
        self.assertEqual(404, response.status_code, response.text)

    def test_both_command_lines_create_list_and_delete_a_group(
            self) -> None:
        for frontend in (clirunner.STANDALONE, clirunner.OPENSTACK):
            rc, nodes = self.enroll(2)
            name = targets.unique("grp")
            created = self.create_group(
                frontend, "--resource-class", rc, "--count", "2",
                "--group", name, "--wait", "120", "-f", "json")
            self.assertEqual(0, created.returncode, created)
            rows = created.json()
            self.assertEqual([f"{name}-0", f"{name}-1"],
                             [r["name"] for r in rows])
            self.assertEqual(["active"] * 2, [r["state"] for r in rows])
            listed = clirunner.run(frontend, self.target.endpoint, "list",
                                   "--group", name, "-f", "json")
            self.assertEqual(0, listed.returncode, listed)
            self.assertEqual(sorted(r["uuid"] for r in rows),
                             sorted(r["uuid"] for r in listed.json()))
            failed = clirunner.run(
                frontend, self.target.endpoint, "create",
                "--resource-class", rc, "--count", "1", "--all-or-nothing",
                "--wait", "120", "-f", "json")
            self.assertEqual(1, failed.returncode, failed)
            self.assertIn("Group of 1 not reserved", failed.stderr)
            self.assertEqual("", failed.stdout)
            deleted = clirunner.run(frontend, self.target.endpoint,
                                    "delete", "--group", name)
            self.assertEqual(0, deleted.returncode, deleted)
            self.assertEqual(2, deleted.stdout.count("Deleted allocation"))
            self.assertNothingLeft(rc, nodes)

    def test_a_group_with_a_lease_expires_member_by_member(self) -> None:
        """Every member carries the lease keys (SDK and command line);
        ``expire`` releases each ended member on its own, and a member
        renewed in time stays."""
        rc, nodes = self.enroll(4)
        made = self.allocate_group(
            2, rc, name=targets.unique("grp"), timeout=120, lease="1s")
        name = targets.unique("grp")
        created = self.create_group(
            clirunner.STANDALONE, "--resource-class", rc, "--count", "2",
            "--group", name, "--lease", "1s", "--wait", "120", "-f", "json")
        self.assertEqual(0, created.returncode, created)
        members = made + self.client.list_group(name)
        for member in members:
            found = member.marks
            self.assertEqual("1s", found[leases.DURATION_KEY], member)
            self.assertIsNotNone(leases.expires_at(found), member)
        kept = self.client.renew_lease(str(members[-1].uuid), "1h")
        # The last to end: the second group was made after the first
        # (seconds later on a loaded machine).
        ended = max(leases.expires_at(m.marks) or leases.utcnow()
                    for m in members[:-1])
        time.sleep(max(0.0, (ended - leases.utcnow()).total_seconds()) + 1.2)
        report = self.client.expire(resource_class=rc)
        self.assertEqual(sorted(str(m.uuid) for m in members[:-1]),
                         sorted(str(e.allocation.uuid)
                                for e in report.of(Outcome.RELEASED)))
        self.assertEqual([kept.uuid], [
            a.uuid for a in self.client.list_allocations(resource_class=rc)])
        self.client.delete_allocation(str(kept.uuid))
        self.assertNothingLeft(rc, nodes)

    def test_renew_a_group_sdk_and_both_command_lines(self) -> None:
        """``renew_group`` / ``renew --group``: every member gets the same
        new end, other keys of ``extra`` stay, the members renewed are
        named; a member released meanwhile is simply not there."""
        rc, nodes = self.enroll(3)
        name = targets.unique("grp")
        made = self.allocate_group(3, rc, name=name, timeout=120,
                                   lease="1m", extra={"job": "7"})
        first_end = leases.expires_at(made[0].marks)
        assert first_end is not None
        renewed = self.client.renew_group(name, "2h")
        self.assertEqual([a.uuid for a in made], [a.uuid for a in renewed])
        ends = set()
        for member in renewed:
            extra = self.target.allocation(str(member.uuid))["extra"]
            found = self.marks_of(str(member.uuid))
            self.assertEqual(("7", "2h"), (extra["job"],
                                           found[leases.DURATION_KEY]))
            ends.add(found[leases.EXPIRES_KEY])
        self.assertEqual(1, len(ends), ends)
        self.assertGreater(leases.parse_timestamp(ends.pop()),
                           first_end + datetime.timedelta(hours=1))
        self.client.delete_allocation(str(made[1].uuid))
        for frontend in (clirunner.STANDALONE, clirunner.OPENSTACK):
            result = clirunner.run(frontend, self.target.endpoint, "renew",
                                   "--group", name, "--lease", "3h")
            self.assertEqual(0, result.returncode, result)
            lines = result.stdout.splitlines()
            self.assertEqual(2, len(lines), result)
            for line, member in zip(lines, (made[0], made[2]), strict=True):
                self.assertTrue(line.startswith(
                    f"Renewed allocation {member.name} ({member.uuid}) of "
                    f"group {name}: lease ends at "), line)
            for member in (made[0], made[2]):
                found = self.marks_of(str(member.uuid))
                self.assertEqual("3h", found[leases.DURATION_KEY])
                self.assertIn(found[leases.EXPIRES_KEY], result.stdout)
            missing = clirunner.run(frontend, self.target.endpoint, "renew",
                                    "--group", targets.unique("none"),
                                    "--lease", "1h")
            self.assertEqual(1, missing.returncode, missing)
            self.assertIn("has no allocations", missing.stderr)
            for args in (("--group", name), ("x", "--group", name,
                                             "--lease", "1h")):
                usage = clirunner.run(frontend, self.target.endpoint,
                                      "renew", *args)
                self.assertEqual(2, usage.returncode, usage)
        self.assertEqual([], self.client.renew_group(targets.unique("none"),
                                                     "1h"))
        self.assertRaises(exceptions.InvalidArgument,
                          self.client.renew_group, name, "0s")
        self.client.release_group(name)
        self.assertNothingLeft(rc, nodes)


globals().update(targets.per_target(Groups))
