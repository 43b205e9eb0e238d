"""A candidate another transaction only locks is not counted as taken.

Reservation skips a node whose row another transaction holds (a stalled
process must not hold up every worker), but the last search round waits
for the lock: a transaction that locked the only matching node and then
rolled back must not make the allocation fail while the node stays free.
And when concurrent requests did take every match, the failure says so in
Ironic's wording, as of the moment the allocation failed.
"""

from __future__ import annotations

import threading
import time
import uuid as uuidlib
from typing import Any

import testtools
from sqlalchemy import select

from baremetal_allocclient.server.allocation import selection
from baremetal_allocclient.server.allocation.backends.base import Job
from baremetal_allocclient.server.allocation.backends.database import (
    DatabaseBackend,
)
from baremetal_allocclient.server.db.models import Allocation, Node, utcnow
from baremetal_allocclient.tests.fixtures import databases

#: How long the other transaction holds the node: longer than the four
#: skipping rounds take, far shorter than the lock timeout (5 s).
_HOLD = 1.0


class _LockedCandidateTests(databases.MigratedPerClass):

    def _node(self, rc: str) -> int:
        with self.db.write() as session:
            node = Node(uuid=str(uuidlib.uuid4()), name=None,
                        driver="fake-hardware", resource_class=rc,
                        provision_state="available", power_state="power off",
                        maintenance=False, properties={})
            session.add(node)
            session.flush()
            return node.id

    def _job(self, rc: str) -> Job:
        uuid = str(uuidlib.uuid4())
        with self.db.write() as session:
            alloc = Allocation(uuid=uuid, state="allocating",
                               resource_class=rc, conductor_affinity="c1",
                               created_at=utcnow())
            session.add(alloc)
            session.flush()
            allocation_id = alloc.id
        request = selection.Request(rc)
        return Job(allocation_id, uuid, request,
                   tuple(selection.active_filters(request)), "c1")

    def _hold_then_roll_back(self, node_id: int, locked: threading.Event
                             ) -> None:
        with self.db.engine.connect() as conn, conn.begin() as txn:
            conn.execute(select(Node.id).where(Node.id == node_id)
                         .with_for_update())
            locked.set()
            time.sleep(_HOLD)
            txn.rollback()

    def test_a_node_locked_and_left_is_reserved(self) -> None:
        case: Any = self
        rc = f"rc-{uuidlib.uuid4().hex[:8]}"
        node_id = self._node(rc)
        job = self._job(rc)
        locked = threading.Event()
        holder = threading.Thread(target=self._hold_then_roll_back,
                                  args=(node_id, locked))
        holder.start()
        case.addCleanup(holder.join)
        case.assertTrue(locked.wait(10))
        settled = DatabaseBackend(self.db).allocate(job)
        assert settled is not None
        case.assertEqual(("active", None), (settled.state,
                                            settled.last_error))

    def test_every_match_taken_is_said_as_ironic_says_it(self) -> None:
        case: Any = self
        rc = f"rc-{uuidlib.uuid4().hex[:8]}"
        self._node(rc)
        backend = DatabaseBackend(self.db)
        first = backend.allocate(self._job(rc))
        assert first is not None
        case.assertEqual("active", first.state)
        second = backend.allocate(self._job(rc))
        assert second is not None and second.last_error is not None
        case.assertEqual("error", second.state)
        case.assertIn(f"no available nodes match the resource class {rc}",
                      second.last_error)


class PostgreSQLLockedCandidateTests(_LockedCandidateTests,
                                     testtools.TestCase):
    kind = "postgresql"


class MySQLLockedCandidateTests(_LockedCandidateTests, testtools.TestCase):
    kind = "mysql"
