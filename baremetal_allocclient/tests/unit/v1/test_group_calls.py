"""HTTP-level tests of the group calls (v1/grouping.py).
"""

from __future__ import annotations

import json

from baremetal_allocclient import exceptions, groups, leases
from baremetal_allocclient.tests.unit.v1 import fakes
from baremetal_allocclient.tests.unit.v1.client_case import (
    ALLOCS,
    ClientTestCase,
    E,
)


class GroupCallsTest(ClientTestCase):
    """Renewing a group."""

    def setUp(self) -> None:
        super().setUp()
        self.mock.get(E + "/", json={})  # Must not be needed.
        # Where the lease goes: real Ironic advertises no extension.
        self.mock.get(E + "/v1", headers=self.headers(), json={"id": "v1"})

    def test_renew_group_renews_every_member_and_names_failures(
            self) -> None:
        marks = {groups.GROUP_KEY: "g", groups.SIZE_KEY: 3}
        members = [fakes.allocation(f"a{i}", name=f"g-{i}", state="active",
                                    extra=marks) for i in range(3)]
        self.mock.get(ALLOCS, headers=self.headers(),
                      json={"allocations": members})
        for i in (0, 2):
            self.mock.patch(f"{ALLOCS}/a{i}", headers=self.headers(),
                            json=members[i])
        self.mock.patch(f"{ALLOCS}/a1", status_code=404,
                        headers=self.headers(), json=fakes.ironic_error(
                            "Allocation a1 could not be found."))
        with self.assertRaises(exceptions.ClientError) as ctx:
            self.client.renew_group("g", "2h")
        self.assertIn("Could not renew 1 allocation(s) of group g "
                      "(renewed 2, g-0, g-2):\n  g-1: ", str(ctx.exception))
        patches = [r for r in self.history if r.method == "PATCH"]
        self.assertEqual(3, len(patches))
        ends = {json.dumps(r.json(), sort_keys=True) for r in patches}
        self.assertEqual(1, len(ends), ends)  # one end for every member
        self.assertIn(leases.EXPIRES_KEY, ends.pop())  # a key of extra
        self.assertRaises(exceptions.InvalidArgument,
                          self.client.renew_group, "g", "2x")
        self.assertEqual(3, len([r for r in self.history
                                 if r.method == "PATCH"]))

    def test_renewal_is_the_lease_field_where_the_server_has_one(
            self) -> None:
        """The reference server keeps the lease out of ``extra``: the
        renewal patches its ``lease`` field, opted into."""
        self.mock.get(E + "/v1", headers=self.headers(), json={
            "id": "v1", "extensions": {"leases": {
                "version": 2, "field": "lease"}}})
        member = fakes.allocation("a0", name="g-0", state="active",
                                  extra={"job": "x"})
        member["group"] = {"name": "g", "size": 1}
        self.mock.get(ALLOCS, headers=self.headers(),
                      json={"allocations": [member]})
        self.mock.patch(f"{ALLOCS}/a0", headers=self.headers(), json=member)
        self.client.renew_group("g", "2h")
        patch = next(r for r in self.history if r.method == "PATCH")
        [op] = patch.json()
        self.assertEqual(("add", "/lease", "2h"),
                         (op["op"], op["path"], op["value"]["duration"]))
        self.assertIn("leases", patch.headers["X-Baremetal-Alloc-Extensions"])
