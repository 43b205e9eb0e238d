"""A reservation beside the waiting line, on every database.

``reservation.reserve`` gives a node to an allocation only while no
allocation that came earlier waits in line for it; one waiting for
something the node cannot give does not hold it.  On SQLite the usual
case is one compare-and-set that also asks that nobody earlier waits;
when someone does, the node is read and the line asked who matches it,
as on PostgreSQL and MariaDB.  Either way the allocation's traits are
merged into the node's ``instance_info``.  The rows are written and
``reserve`` is called directly: no worker or queue round runs in
between, so each outcome is deterministic.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import testtools
from sqlalchemy import select

from baremetal_allocclient.server.allocation import reservation, selection
from baremetal_allocclient.server.allocation.states import ACTIVE, ALLOCATING
from baremetal_allocclient.server.db.models import (
    Allocation,
    Node,
    NodeTrait,
    utcnow,
)
from baremetal_allocclient.tests.fixtures import databases

AFFINITY = "reserving-conductor"


class _ReservationBesideTheLine(databases.MigratedPerClass):
    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        self.case: Any = self
        self.rc = "rc-" + uuid.uuid4().hex[:12]

    def _node(self, info: Any, traits: tuple[str, ...] = ()) -> int:
        with self.db.write() as session:
            node = Node(
                uuid=str(uuid.uuid4()), driver="fake-hardware",
                resource_class=self.rc, provision_state="available",
                power_state="power off", maintenance=False,
                instance_info=info)
            session.add(node)
            session.flush()
            for trait in traits:
                session.add(NodeTrait(node_id=node.id, trait=trait))
            return node.id

    def _allocation(self, traits: tuple[str, ...] = (),
                    waiting: bool = False) -> tuple[int, str]:
        made = str(uuid.uuid4())
        now = utcnow()
        with self.db.write() as session:
            row = Allocation(
                uuid=made, state=ALLOCATING, resource_class=self.rc,
                traits=list(traits), candidate_nodes=[], extra={},
                conductor_affinity="elsewhere" if waiting else AFFINITY,
                created_at=now, queue_deadline=now + datetime.timedelta(
                    hours=1) if waiting else None)
            session.add(row)
            session.flush()
            return row.id, made

    def _reserve(self, node_id: int, traits: tuple[str, ...] = ()
                 ) -> reservation.Reservation:
        """A new allocation of ``traits`` reserving ``node_id``."""
        return self._reserve_for(self._allocation(traits), node_id, traits)

    def _reserve_for(self, allocation: tuple[int, str], node_id: int,
                     traits: tuple[str, ...] = ()
                     ) -> reservation.Reservation:
        """``allocation`` (its id and UUID) reserving ``node_id``."""
        request = selection.Request(self.rc, traits=traits)
        return reservation.reserve(
            self.db, *allocation, node_id, request,
            tuple(selection.active_filters(request)), AFFINITY)

    def _node_row(self, node_id: int) -> tuple[Any, Any, Any]:
        with self.db.read() as session:
            node = session.get(Node, node_id)
            assert node is not None
            state = session.scalar(select(Allocation.state).where(
                Allocation.id == node.allocation_id))
            return node.allocation_id, node.instance_info, state

    def test_nobody_in_line_the_node_is_given_and_its_info_kept(
            self) -> None:
        node_id = self._node({"keep": {"a": [1, 2]}, "traits": ["OLD"]},
                             ("CUSTOM_GPU",))
        self.case.assertIs(reservation.Reservation.RESERVED,
                           self._reserve(node_id, ("CUSTOM_GPU",)))
        allocation_id, info, state = self._node_row(node_id)
        self.case.assertIsNotNone(allocation_id)
        self.case.assertEqual(ACTIVE, state)
        self.case.assertEqual(
            {"keep": {"a": [1, 2]}, "traits": ["CUSTOM_GPU"]}, info)

    def test_a_node_with_null_info_gets_the_traits_alone(self) -> None:
        node_id = self._node(None)
        self.case.assertIs(reservation.Reservation.RESERVED,
                           self._reserve(node_id))
        self.case.assertEqual({"traits": []}, self._node_row(node_id)[1])

    def test_one_earlier_in_line_for_the_node_keeps_it(self) -> None:
        node_id = self._node({"keep": 1})
        self._allocation(waiting=True)
        self.case.assertIs(reservation.Reservation.NODE_TAKEN,
                           self._reserve(node_id))
        self.case.assertEqual((None, {"keep": 1}, None),
                              self._node_row(node_id))

    def test_one_earlier_in_line_for_another_node_does_not_hold(
            self) -> None:
        node_id = self._node({"keep": 1})
        self._allocation(traits=("CUSTOM_NONE_HAS",), waiting=True)
        self.case.assertIs(reservation.Reservation.RESERVED,
                           self._reserve(node_id))
        allocation_id, info, state = self._node_row(node_id)
        self.case.assertEqual(({"keep": 1, "traits": []}, ACTIVE),
                              (info, state))
        self.case.assertIsNotNone(allocation_id)

    def test_a_taken_node_is_left_as_it_is(self) -> None:
        node_id = self._node({"keep": 1})
        self.case.assertIs(reservation.Reservation.RESERVED,
                           self._reserve(node_id, ()))
        before = self._node_row(node_id)
        self.case.assertIs(reservation.Reservation.NODE_TAKEN,
                           self._reserve(node_id, ("CUSTOM_X",)))
        self.case.assertEqual(before, self._node_row(node_id))

    def test_a_deleted_allocation_gets_no_node(self) -> None:
        node_id = self._node({"keep": 1})
        allocation = self._allocation()
        with self.db.write() as session:
            row = session.get(Allocation, allocation[0])
            session.delete(row)
        self.case.assertIs(reservation.Reservation.ALLOCATION_DELETED,
                           self._reserve_for(allocation, node_id))
        self.case.assertEqual((None, {"keep": 1}, None),
                              self._node_row(node_id))

    def test_an_allocation_taken_over_gets_no_node(self) -> None:
        """The node is changed first (the one lock order); an allocation
        another conductor took over meanwhile rolls that back."""
        node_id = self._node({"keep": 1})
        allocation = self._allocation()
        allocation_id = allocation[0]
        with self.db.write() as session:
            row = session.get(Allocation, allocation_id)
            assert row is not None
            row.conductor_affinity = "another-conductor"
        self.case.assertIs(reservation.Reservation.NOT_OURS,
                           self._reserve_for(allocation, node_id))
        self.case.assertEqual((None, {"keep": 1}, None),
                              self._node_row(node_id))
        with self.db.read() as session:
            self.case.assertEqual(ALLOCATING, session.scalar(
                select(Allocation.state).where(
                    Allocation.id == allocation_id)))


class SQLiteReservationBesideTheLine(_ReservationBesideTheLine,
                                     testtools.TestCase):
    kind = "sqlite"


class PostgreSQLReservationBesideTheLine(_ReservationBesideTheLine,
                                         testtools.TestCase):
    kind = "postgresql"


class MariaDBReservationBesideTheLine(_ReservationBesideTheLine,
                                      testtools.TestCase):
    kind = "mysql"
