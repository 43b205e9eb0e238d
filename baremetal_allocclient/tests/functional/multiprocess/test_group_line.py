"""A group never takes a node promised to an allocation waiting in line.

Allocations waiting in line arrived before any group made now, so a
group reservation (one transaction,
``server/allocation/group_reservation.py``) leaves them the nodes they
get first, on every database.  The rows are written and
the reservation is called directly: no queue round can run in between,
so the outcome is deterministic.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import testtools
from sqlalchemy import select

from baremetal_allocclient.server.allocation import (
    group_reservation as group_db,
)
from baremetal_allocclient.server.allocation.selection import Request
from baremetal_allocclient.server.allocation.states import ACTIVE, ALLOCATING
from baremetal_allocclient.server.db.models import (
    Allocation,
    Node,
    NodeTrait,
    utcnow,
)
from baremetal_allocclient.tests.fixtures import databases


class _GroupLine(databases.MigratedPerClass):
    """Mixin: ``kind`` is set by the concrete classes."""

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        self.case: Any = self
        self.rc = "rc-" + uuid.uuid4().hex[:12]

    def _nodes(self, count: int, traits: tuple[str, ...] = ()) -> None:
        with self.db.write() as session:
            for _ in range(count):
                node = Node(
                    uuid=str(uuid.uuid4()), driver="fake-hardware",
                    resource_class=self.rc, provision_state="available",
                    power_state="power off", maintenance=False,
                    instance_info={}, properties={}, extra={},
                    driver_info={}, driver_internal_info={},
                    network_data={}, protected=False, retired=False,
                    conductor_group="")
                session.add(node)
                session.flush()
                for trait in traits:
                    session.add(NodeTrait(node_id=node.id, trait=trait))

    def _waiting(self, traits: tuple[str, ...] = (),
                 deadline_in: float = 3600) -> str:
        """An allocation waiting in line (as the API stores one)."""
        made = str(uuid.uuid4())
        now = utcnow()
        with self.db.write() as session:
            session.add(Allocation(
                uuid=made, state=ALLOCATING, resource_class=self.rc,
                traits=list(traits), candidate_nodes=[], extra={},
                conductor_affinity="elsewhere", created_at=now,
                queue_deadline=now + datetime.timedelta(
                    seconds=deadline_in)))
        return made

    def _group(self, count: int) -> group_db.Outcome:
        request = Request(resource_class=self.rc)

        def build() -> list[Allocation]:
            return [Allocation(
                uuid=str(uuid.uuid4()), state=ACTIVE,
                resource_class=self.rc, traits=[], candidate_nodes=[],
                extra={}, conductor_affinity="me") for _ in range(count)]

        return group_db.reserve_group(self.db, count, build, request, None)

    def _free(self) -> int:
        with self.db.read() as session:
            return len(session.scalars(select(Node.id).where(
                Node.resource_class == self.rc,
                Node.allocation_id.is_(None))).all())

    def test_group_leaves_the_node_of_the_one_in_line(self) -> None:
        self._nodes(2)
        self._waiting()
        refused = self._group(2)
        self.case.assertEqual((), refused.members)
        self.case.assertIn("1 of the 2 nodes needed are available",
                           refused.reason)
        self.case.assertIn("1 more promised to allocations waiting in line",
                           refused.reason)
        self.case.assertEqual(2, self._free())
        made = self._group(1)
        self.case.assertIsNone(made.reason)
        self.case.assertEqual(1, len(made.members))
        self.case.assertEqual(1, self._free())  # the one in line's node

    def test_each_in_line_is_promised_one_node(self) -> None:
        self._nodes(5)
        self._waiting()
        self._waiting()
        self.case.assertIn("3 of the 4 nodes needed", self._group(4).reason)
        self.case.assertEqual(3, len(self._group(3).members))
        self.case.assertEqual(2, self._free())

    def test_in_line_for_other_nodes_or_expired_does_not_hold(self) -> None:
        self._nodes(2)
        self._waiting(traits=("CUSTOM_NONE_HAS",))
        self._waiting(deadline_in=-1)  # its time in line is up
        made = self._group(2)
        self.case.assertIsNone(made.reason)
        self.case.assertEqual(0, self._free())


class SQLiteGroupLine(_GroupLine, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLGroupLine(_GroupLine, testtools.TestCase):
    kind = "postgresql"


class MariaDBGroupLine(_GroupLine, testtools.TestCase):
    kind = "mysql"
