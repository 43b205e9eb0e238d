"""Pure decisions of the SDK's groups: wire body, member requests,
failure wording."""

from __future__ import annotations

import testtools

from baremetal_allocclient import exceptions, groups
from baremetal_allocclient.constraints import Constraints
from baremetal_allocclient.v1 import grouping
from baremetal_allocclient.v1.request import AllocationRequest as Request
from baremetal_allocclient.v1.resources import Allocation


class GroupingTest(testtools.TestCase):

    def test_advertisement(self) -> None:
        for version in (1, 2):
            doc = {"extensions": {"groups": {"version": version}}}
            self.assertTrue(grouping.extension_advertised(doc))
        for other in ({}, None, {"extensions": {"groups": {"version": 3}}},
                      {"extensions": []}):
            self.assertFalse(grouping.extension_advertised(other))

    def test_spread_advertisement(self) -> None:
        """A server whose groups entry lists ``spread`` spreads a group
        itself; an older one (no list) leaves it to the client."""
        from baremetal_allocclient.v1 import extensions

        spreads = {"extensions": {"groups": {
            "version": 2, "spread": ["conductor_group", "property:"]}}}
        self.assertTrue(extensions.spread_advertised(spreads))
        for other in ({"extensions": {"groups": {"version": 2}}},
                      {"extensions": {"groups": {"version": 3,
                                                 "spread": []}}}, None):
            self.assertFalse(extensions.spread_advertised(other))

    def test_wire_body(self) -> None:
        request = Request(resource_class="rc", traits=("CUSTOM_A",),
                          name="g", constraints=Constraints(shard="s"))
        self.assertEqual(
            {"count": 2, "uuids": ["a", "b"], "resource_class": "rc",
             "traits": ["CUSTOM_A"], "name": "g",
             "constraints": {"shard": "s"}},
            grouping.wire_body(request, 2, ["a", "b"]))

    def test_member_requests(self) -> None:
        members = grouping.member_requests(
            Request(resource_class="rc", name="g", extra={"k": "v"}), 2,
            ["a", "b"])
        self.assertEqual([("g-0", "a"), ("g-1", "b")],
                         [(m.name, m.uuid) for m in members])
        self.assertEqual({"k": "v", groups.GROUP_KEY: "g",
                          groups.SIZE_KEY: "2"}, members[1].extra)

    def test_failure_names_the_member_and_its_last_error(self) -> None:
        made = [Allocation(uuid="a", name="g-0", state="active"),
                Allocation(uuid="b", name="g-1", state="error",
                           last_error="No available nodes")]
        exc = exceptions.AllocationFailed(made[1], "No available nodes",
                                          results=made)
        reason, failed = grouping.failure_reason(2, made, exc)
        self.assertEqual("Group of 2 not reserved: allocation 2 of 2 (g-1) "
                         "failed: No available nodes", reason)
        self.assertIs(made[1], failed)
        late = exceptions.WaitTimeout([made[0]], 5.0, results=made)
        self.assertIn("allocation 1 of 2 (g-0) failed: still active when "
                      "the time limit of 5 s ran out",
                      grouping.failure_reason(2, made, late)[0])

    def test_the_servers_refusal_is_not_a_roll_back(self) -> None:
        error = grouping.native_failure(3, exceptions.Conflict(
            "Group of 3 not reserved (nothing was created): 2 of the 3 "
            "nodes needed are available", status_code=409))
        self.assertEqual("Group of 3 not reserved (nothing was created): "
                         "2 of the 3 nodes needed are available",
                         str(error))
