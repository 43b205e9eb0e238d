"""Leases through the SDK on both targets: recorded in ``extra`` where
every client sees them, renewed, listed, and expired by ``expire()``.

The reference target here is not started with ``--expire-leases``, so on
both targets it is the client that expires (what a cron job does against
real Ironic).  Every call is limited to the test's own resource class.
"""

from __future__ import annotations

import datetime
import time
from typing import Any

from baremetal_allocclient import exceptions, leases
from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.v1 import Allocation, Client, leasing
from baremetal_allocclient.v1.leasing import Outcome

#: Short enough to keep the tests fast; the end is rounded up to a whole
#: second, so the wait is at most two seconds.
SHORT = "1s"


def wait_until_ended(*allocations: object) -> None:
    """Sleep until the lease of each allocation has ended."""
    for allocation in allocations:
        end = leases.expires_at(getattr(allocation, "marks", None))
        assert end is not None
        pause = (end - leases.utcnow()).total_seconds() + 0.1
        if pause > 0:
            time.sleep(pause)


class Leases(base.ContractMixin):
    """Lease keys, renew, ``expired`` listing and ``expire``."""

    def setUp(self) -> None:
        super().setUp()
        self.client = Client.from_endpoint(self.target.endpoint)
        self.addCleanup(self.client.close)

    def allocate(self, rc: str, lease: str,  # type: ignore[override]
                 **kw: Any) -> Allocation:
        for _attempt in range(3):
            try:
                made = self.client.allocate(rc, lease=lease, timeout=60,
                                            **kw)
            except exceptions.AllocationFailed as exc:
                # Real Ironic on SQLite: "database is locked" now and then.
                if "database is locked" not in str(exc):
                    raise
                continue
            self.addCleanup(self.client.delete_allocation, str(made.uuid),
                            ignore_missing=True)
            return made
        raise AssertionError("allocation kept failing")

    def test_lease_is_recorded_renewed_and_listed(self) -> None:
        rc, _ = self.enroll(2)
        before = leases.utcnow()
        made = self.allocate(rc, "1h", extra={"job": "ci-1"})
        # A plain GET shows extra as written on the reference server (the
        # lease is its field); on real Ironic the keys are in extra.
        extra = self.target.allocation(made.uuid)["extra"]
        self.assertEqual("ci-1", extra["job"])
        self.assertEqual(self.serves_allocations,
                         leases.EXPIRES_KEY not in extra)
        found = self.marks_of(made.uuid)
        self.assertEqual("1h", found[leases.DURATION_KEY])
        end = leases.parse_timestamp(found[leases.EXPIRES_KEY])
        self.assertGreaterEqual(end, before + datetime.timedelta(hours=1))
        self.assertLess(end, leases.utcnow() + datetime.timedelta(
            hours=1, seconds=2))

        renewed = self.client.renew_lease(made.uuid, "2h")
        self.assertEqual("ci-1", renewed.extra["job"])
        self.assertEqual("2h", renewed.marks[leases.DURATION_KEY])
        self.assertGreater(leases.expires_at(renewed.marks), end)

        later = leases.utcnow() + datetime.timedelta(hours=3)

        def uuids(**kw: Any) -> list[str]:
            return sorted(str(a.uuid) for a in self.client.list_allocations(
                resource_class=rc, **kw))
        self.assertEqual([], uuids(expired=True))
        self.assertEqual([made.uuid], uuids(expired=False))
        self.assertEqual([made.uuid], uuids(expired=True, now=later,
                                            fields=["uuid"]))

    def test_expire_releases_ended_leases_and_reports_deployed(self) -> None:
        rc, _ = self.enroll(3)
        ended = self.allocate(rc, SHORT)
        deployed = self.allocate(rc, SHORT)
        running = self.allocate(rc, "1h")
        self.deploy(deployed.node_uuid)
        wait_until_ended(ended, deployed)

        dry = self.client.expire(resource_class=rc, dry_run=True)
        self.assertEqual(
            {(ended.uuid, Outcome.WOULD_RELEASE),
             (deployed.uuid, Outcome.DEPLOYED)},
            {(e.allocation.uuid, e.outcome) for e in dry.entries})
        self.assertReserved(self.target.allocation(ended.uuid))

        report = self.client.expire(resource_class=rc)
        self.assertEqual(
            {(ended.uuid, Outcome.RELEASED),
             (deployed.uuid, Outcome.DEPLOYED)},
            {(e.allocation.uuid, e.outcome) for e in report.entries})
        self.assertReleased(ended.node_uuid, ended.uuid)
        self.assertReserved(self.target.allocation(running.uuid))
        self.assertReserved(self.target.allocation(deployed.uuid))
        # Released once: a second run finds nothing more to release.
        again = self.client.expire(resource_class=rc)
        self.assertEqual([], again.of(Outcome.RELEASED))

        torn = self.client.expire(resource_class=rc, undeploy=True)
        self.assertEqual([(deployed.uuid, Outcome.UNDEPLOYING)],
                         [(e.allocation.uuid, e.outcome)
                          for e in torn.entries])
        self.target.wait_node(deployed.node_uuid,
                              base.settled("available"), what="available")
        self.assertReleased(deployed.node_uuid, deployed.uuid)

    def test_a_lease_renewed_after_the_listing_is_not_expired(self) -> None:
        rc, _ = self.enroll(1)
        made = self.allocate(rc, SHORT)
        wait_until_ended(made)
        (stale,) = self.client.list_allocations(resource_class=rc,
                                                expired=True)
        self.client.renew_lease(stale, "1h")
        entry = leasing._expire_one(self.client, stale, False, False,
                                    leases.utcnow)
        self.assertEqual(Outcome.CHANGED, entry.outcome)
        self.assertEqual("lease renewed", entry.reason)
        self.assertReserved(self.target.allocation(made.uuid))

    def test_bad_leases_are_refused_before_any_request(self) -> None:
        rc = targets.unique("rc-none")
        for bad in ("2x", "0s", datetime.timedelta(days=-1)):
            self.assertRaises(exceptions.InvalidArgument,
                              self.client.create_allocation, rc,
                              lease=bad)
        self.assertEqual([], list(self.client.list_allocations(
            resource_class=rc)))


globals().update(targets.per_target(Leases))
