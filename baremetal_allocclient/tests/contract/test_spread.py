"""Groups spread over a failure domain on both targets: the reference
server decides it in the group's one transaction, real Ironic through
the SDK on the client (best effort).  The same calls and commands give
the same members per rack, and the same refusal, with nothing left."""

from __future__ import annotations

import collections
import json
import os
import sys
from typing import Any, ClassVar

from baremetal_allocclient import exceptions
from baremetal_allocclient.spread import Spread
from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.fixtures import preforked
from baremetal_allocclient.tests.fixtures.processes import clean_env
from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.v1.client import Client

#: Two nodes in r1, two in r2, one in r3, one without a rack.
_RACKS = ("r1", "r1", "r2", "r2", "r3", None)
_BIN = os.path.dirname(sys.executable)
RACK = Spread("property:rack")
#: Real Ironic's SQLite error under concurrent allocations.
LOCKED = "database is locked"


class Spreading(base.ContractMixin):
    """allocate_group(spread=...) and create --spread-over."""

    rc: ClassVar[str]
    rack_of: ClassVar[dict[str, str | None]]  # node UUID -> rack

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.rc = targets.unique("rc")
        nodes = cls.target.make_nodes(
            len(_RACKS), cls.rc, name_prefix=targets.unique("spr"),
            each=[{"properties": {"cpus": 4} if rack is None
                   else {"cpus": 4, "rack": rack}} for rack in _RACKS])
        cls.rack_of = {n["uuid"]: rack
                       for n, rack in zip(nodes, _RACKS, strict=True)}

    def setUp(self) -> None:
        super().setUp()
        self.client = Client.from_endpoint(self.target.endpoint)
        self.addCleanup(self.client.close)

    def racks(self, made: list[Any]) -> dict[str | None, int]:
        self.addCleanup(self._release, [str(a.uuid) for a in made])
        return dict(collections.Counter(
            self.rack_of[str(a.node_uuid)] for a in made))

    def _release(self, uuids: list[str]) -> None:
        for uuid in uuids:
            self.client.delete_allocation(uuid, ignore_missing=True)

    def test_one_member_per_rack(self) -> None:
        made = self.allocate_group(3, spread=RACK)
        self.assertEqual({"r1": 1, "r2": 1, "r3": 1}, self.racks(made))

    def test_two_per_rack_fullest_racks_first(self) -> None:
        made = self.allocate_group(
            4, spread=Spread("property:rack", max_per_domain=2,
                             min_domains=3))
        counts = self.racks(made)
        self.assertEqual([1, 1, 2], sorted(counts.values()))
        self.assertEqual({"r1", "r2", "r3"}, set(counts))

    def test_refusal_says_why_and_leaves_nothing(self) -> None:
        with self.assertRaises(exceptions.GroupFailed) as caught:
            self.client.allocate_group(4, self.rc, spread=RACK, timeout=60)
        self.assertIn(
            "spread over rack cannot place 4 members, at most 1 per rack: "
            "3 placeable (r1 2 free, r2 2 free, r3 1 free; 1 matching "
            "nodes have no rack)", caught.exception.reason)
        self.assertEqual(
            [], list(self.client.list_allocations(resource_class=self.rc)))

    def test_spread_over_conductor_group(self) -> None:
        """Every node is in the one default group: one member fits, two
        at most one per group do not."""
        made = self.allocate_group(1, spread=Spread("conductor_group"))
        self.assertEqual(1, len(self.racks(made)))
        with self.assertRaises(exceptions.GroupFailed) as caught:
            self.client.allocate_group(
                2, self.rc, spread=Spread("conductor_group"), timeout=60)
        self.assertIn("spread over conductor_group cannot place 2 members",
                      caught.exception.reason)

    def allocate_group(self, count: int, spread: Spread) -> list[Any]:
        """``allocate_group``, again when real Ironic on SQLite failed a
        member with "database is locked" (its transient weakness under
        concurrent allocations; the group was rolled back), as
        test_groups does."""
        for attempt in range(3):
            before = self.target.log_mentions(LOCKED)
            try:
                return self.client.allocate_group(count, self.rc,
                                                  spread=spread, timeout=60)
            except exceptions.GroupFailed as exc:
                locked = (LOCKED in exc.reason
                          or self.target.log_mentions(LOCKED) > before)
                if not locked or attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def test_command_line(self) -> None:
        for _attempt in range(3):
            before = self.target.log_mentions(LOCKED)
            proc = preforked.run(
                [os.path.join(_BIN, "baremetal-alloc"), "--os-auth-type",
                 "none", "--os-endpoint", self.target.endpoint, "create",
                 "--resource-class", self.rc, "--count", "3",
                 "--spread-over", "property:rack", "--wait", "60", "-f",
                 "json"], env=clean_env(), timeout=120)
            if LOCKED not in proc.stderr and (
                    proc.returncode == 0
                    or self.target.log_mentions(LOCKED) == before):
                break
        self.assertEqual(0, proc.returncode, proc.stderr)
        made = json.loads(proc.stdout)
        self.addCleanup(self._release, [a["uuid"] for a in made])
        self.assertEqual({"r1", "r2", "r3"},
                         {self.rack_of[a["node_uuid"]] for a in made})


globals().update(targets.per_target(Spreading))
