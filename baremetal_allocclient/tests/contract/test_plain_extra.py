"""What an unmodified client reads in ``extra`` (issue 50).

Allocations made through this project's SDK (a group of two, a leased
allocation, a leased group member) are read back by clients that know
nothing of this project: plain ``requests`` without the extension
header, and openstacksdk.  On the reference server their ``extra`` is
exactly what the user wrote (groups and leases live in their own
fields, shown only to a request that opts in); on real Ironic, where
``extra`` is the only place, every value is a string (gophercloud
decodes ``extra`` as ``map[string]string``) and every key the SDK added
starts with its one documented prefix.  The SDK itself still finds the
group and the lease on both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from baremetal_allocclient import exceptions, groups, leases
from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.v1.client import Client

#: Real Ironic's SQLite error under concurrent allocations.
LOCKED = "database is locked"
#: What the user wrote in ``extra``.
USER_EXTRA = {"job": "ci-42", "note": "plain"}


class PlainExtra(base.ContractMixin):
    """``extra`` as an unmodified client reads it."""

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        self.client = Client.from_endpoint(self.target.endpoint)
        self.addCleanup(self.client.close)
        self.rc, _nodes = self.enroll(3)
        self.group = targets.unique("grp")
        self.members = self.again(lambda: self.client.allocate_group(
            2, self.rc, name=self.group, extra=USER_EXTRA, lease="2h",
            timeout=60))
        self.leased = self.again(lambda: self.client.allocate(
            self.rc, extra=USER_EXTRA, lease="1h", timeout=60))
        made = [*self.members, self.leased]
        for allocation in made:
            self.addCleanup(self.client.delete_allocation,
                            str(allocation.uuid), ignore_missing=True)
        self.uuids = sorted(str(a.uuid) for a in made)

    def again(self, make: Callable[[], Any]) -> Any:
        """``make()``, again when real Ironic on SQLite failed it with
        "database is locked" (its transient weakness under concurrent
        allocations, logged; the SDK rolled back what it made), as the
        other contract tests allow."""
        for attempt in range(3):
            before = self.target.log_mentions(LOCKED)
            try:
                return make()
            except (exceptions.AllocationFailed,
                    exceptions.GroupFailed) as exc:
                locked = LOCKED in str(exc) or (
                    self.target.log_mentions(LOCKED) > before)
                if self.is_reference or not locked or attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def assertPlain(self, extra: Any, where: str) -> None:
        """``extra`` as the user wrote it (reference server), or the
        user's keys and string values under the prefix (real Ironic)."""
        if self.serves_allocations:
            self.assertEqual(USER_EXTRA, extra, where)
            return
        self.assertIsInstance(extra, dict, where)
        self.assertEqual(USER_EXTRA, {k: v for k, v in extra.items()
                                      if k in USER_EXTRA}, where)
        self.assertEqual({}, {k: v for k, v in extra.items()
                              if not isinstance(v, str)}, where)
        added = set(extra) - set(USER_EXTRA)
        self.assertTrue(added, where)  # the group and the lease are there
        self.assertEqual(set(), {k for k in added
                                 if not k.startswith(groups.PREFIX)}, where)

    def test_plain_requests_list_and_show(self) -> None:
        listed = {a["uuid"]: a for a in targets.iter_pages(
            self.target, f"/v1/allocations?resource_class={self.rc}",
            "allocations")}
        self.assertEqual(self.uuids, sorted(listed))
        for uuid in self.uuids:
            self.assertPlain(listed[uuid]["extra"], f"list {uuid}")
            shown = self.target.expect(200, "GET", f"/v1/allocations/{uuid}")
            self.assertPlain(shown["extra"], f"show {uuid}")
            self.assertNotIn("group", shown)
            self.assertNotIn("lease", shown)
            node = self.target.expect(
                200, "GET", f"/v1/nodes/{shown['node_uuid']}/allocation")
            self.assertPlain(node["extra"], f"node allocation {uuid}")

    def test_openstacksdk_list_and_show(self) -> None:
        conn = self.sdk_connection()
        listed = {a.id: a for a in conn.baremetal.allocations(
            resource_class=self.rc)}
        self.assertEqual(self.uuids, sorted(listed))
        for uuid in self.uuids:
            self.assertPlain(dict(listed[uuid].extra), f"list {uuid}")
            shown = conn.baremetal.get_allocation(uuid)
            self.assertPlain(dict(shown.extra), f"show {uuid}")

    def test_the_sdk_still_finds_the_group_and_the_leases(self) -> None:
        found = self.client.list_allocations(group=self.group)
        self.assertEqual(sorted(str(m.uuid) for m in self.members),
                         sorted(str(a.uuid) for a in found))
        for allocation in [*self.members, self.leased]:
            shown = self.client.get_allocation(str(allocation.uuid))
            self.assertIsNotNone(leases.expires_at(shown.marks))
            self.assertEqual(USER_EXTRA, {
                k: v for k, v in (shown.extra or {}).items()
                if k in USER_EXTRA})
        for member in self.members:
            shown = self.client.get_allocation(str(member.uuid))
            self.assertEqual(self.group, groups.group_of(shown.marks))
            self.assertEqual(2, groups.size_of(shown.marks))
        renewed = self.client.renew_lease(str(self.leased.uuid), "3h")
        self.assertEqual("3h", renewed.marks[leases.DURATION_KEY])
        self.assertGreater(leases.expires_at(renewed.marks),
                           leases.expires_at(self.leased.marks))
        shown = self.target.expect(
            200, "GET", f"/v1/allocations/{self.leased.uuid}")
        self.assertPlain(shown["extra"], "after a renewal")


globals().update(targets.per_target(PlainExtra))
