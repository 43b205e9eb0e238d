"""``serve --expire-leases`` rounds against a real SQLite file: what is
released, what is left, and the re-check under the locks."""

from __future__ import annotations

import datetime
from typing import Any

import testtools
from sqlalchemy import select

from baremetal_allocclient import leases
from baremetal_allocclient.server.allocation import marks
from baremetal_allocclient.server.allocation.lease_expiry import (
    LeaseExpiry,
    expire_one,
    expired_uuids,
)
from baremetal_allocclient.server.db.models import Allocation, Node, utcnow
from baremetal_allocclient.server.ironic.fake_hardware import FakeHardware
from baremetal_allocclient.tests.unit.server._sqlite import SQLiteDatabase

UTC = datetime.timezone.utc
NOW = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
ENDED = leases.lease_extra("1m", NOW - datetime.timedelta(minutes=2))
RUNNING = leases.lease_extra("1h", NOW)


class LeaseExpiryTests(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.db = self.useFixture(SQLiteDatabase()).db
        self.hardware = FakeHardware(self.db, step_delay=0.01)
        self.addCleanup(self.hardware.shutdown)

    def held(self, name: str, extra: dict[str, Any],
             provision_state: str = "available",
             state: str = "active") -> str:
        """A node ``name`` held by allocation ``a-<name>``."""
        with self.db.write() as session:
            node = Node(uuid=f"node-{name}", name=name,
                        driver="fake-hardware", resource_class="rc",
                        provision_state=provision_state,
                        power_state="power off", maintenance=False,
                        instance_info={"traits": ["X"], "keep": 1})
            session.add(node)
            session.flush()
            lease, other = {}, dict(extra)
            if leases.EXPIRES_KEY in extra:
                lease = marks.lease_columns_of(extra)
                other = {}
            alloc = Allocation(uuid=f"a-{name}", state=state,
                               resource_class="rc", extra=other, **lease,
                               node_id=node.id if state == "active" else None,
                               created_at=utcnow())
            session.add(alloc)
            session.flush()
            if state == "active":
                node.allocation_id = alloc.id
                node.instance_uuid = alloc.uuid
        return f"a-{name}"

    def node(self, name: str) -> Node:
        with self.db.read() as session:
            found = session.scalars(select(Node).where(Node.name == name)
                                    ).one()
        return found

    def exists(self, uuid: str) -> bool:
        with self.db.read() as session:
            return session.scalars(select(Allocation.id).where(
                Allocation.uuid == uuid)).first() is not None

    def test_round_releases_only_ended_leases_of_undeployed_nodes(
            self) -> None:
        ended = self.held("ended", ENDED)
        running = self.held("running", RUNNING)
        plain = self.held("plain", {"other": "x"})
        deployed = self.held("deployed", ENDED, provision_state="active")
        failed = self.held("failed", ENDED, state="error")
        expiry = LeaseExpiry(self.db, self.hardware, 1.0)
        done = expiry.run_once(NOW)
        self.assertEqual(
            {(ended, leases.Action.RELEASE), (failed, leases.Action.RELEASE),
             (deployed, leases.Action.DEPLOYED)},
            {(d.allocation, d.action) for d in done})
        self.assertFalse(self.exists(ended))
        self.assertFalse(self.exists(failed))
        for kept in (running, plain, deployed):
            self.assertTrue(self.exists(kept), kept)
        freed = self.node("ended")
        self.assertEqual((None, None), (freed.allocation_id,
                                        freed.instance_uuid))
        self.assertEqual({"keep": 1}, freed.instance_info)
        # The deployed node is reported once per process, not every round.
        self.assertEqual([], expiry.run_once(NOW))
        self.assertEqual("active", self.node("deployed").provision_state)

    def test_a_renewal_after_the_scan_is_seen_under_the_locks(self) -> None:
        uuid = self.held("renewed", ENDED)
        self.assertEqual([uuid], list(expired_uuids(self.db, NOW)))
        with self.db.write() as session:
            row = session.scalars(select(Allocation).where(
                Allocation.uuid == uuid)).one()
            for column, value in marks.lease_columns_of(RUNNING).items():
                setattr(row, column, value)
        found = expire_one(self.db, uuid, NOW, undeploy=False)
        assert found is not None
        self.assertEqual(leases.Action.KEEP, found.action)
        self.assertTrue(self.exists(uuid))

    def test_second_expiry_of_the_same_allocation_finds_it_gone(
            self) -> None:
        uuid = self.held("once", ENDED)
        first = expire_one(self.db, uuid, NOW, undeploy=False)
        assert first is not None
        self.assertEqual(leases.Action.RELEASE, first.action)
        self.assertIsNone(expire_one(self.db, uuid, NOW, undeploy=False))

    def test_undeploy_tears_the_node_down_and_that_deletes_it(self) -> None:
        uuid = self.held("deployed", ENDED, provision_state="active")
        expiry = LeaseExpiry(self.db, self.hardware, 1.0, undeploy=True)
        done = expiry.run_once(NOW)
        self.assertEqual([(uuid, leases.Action.UNDEPLOY)],
                         [(d.allocation, d.action) for d in done])
        for _ in range(200):
            if not self.exists(uuid):
                break
            self.hardware._stopping.wait(0.05)
        self.assertFalse(self.exists(uuid))
        node = self.node("deployed")
        self.assertIsNone(node.allocation_id)
        self.assertIn(node.provision_state, ("cleaning", "available"))
