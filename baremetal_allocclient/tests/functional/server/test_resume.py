"""A restarted server finishes the allocations it left ``allocating``."""

from __future__ import annotations

import uuid as uuidlib

import testtools
from sqlalchemy import select

from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Allocation, utcnow
from baremetal_allocclient.tests.fixtures.launcher import ServerProcess


class ResumeTests(testtools.TestCase):
    """Rows left behind by a crash are processed on the next start."""

    def test_resume_own_allocating_rows_only(self) -> None:
        server = ServerProcess()
        self.addCleanup(server.cleanup)
        server.upgrade()
        server.start("--conductor-name", "conductor-a")
        rc = "rc-" + uuidlib.uuid4().hex[:12]
        (node,) = server.make_nodes(1, rc)
        server.stop()

        db = Database(server.db_url)
        self.addCleanup(db.dispose)
        mine, theirs = str(uuidlib.uuid4()), str(uuidlib.uuid4())
        with db.write() as session:
            for uuid, affinity in ((mine, "conductor-a"),
                                   (theirs, "conductor-b")):
                session.add(Allocation(
                    uuid=uuid, state="allocating", resource_class=rc,
                    traits=[], candidate_nodes=[], extra={},
                    conductor_affinity=affinity, created_at=utcnow(),
                ))

        server.start("--conductor-name", "conductor-a")
        alloc = server.wait_allocation(mine)
        self.assertEqual("active", alloc["state"])
        self.assertEqual(node["uuid"], alloc["node_uuid"])
        with db.read() as session:
            state = session.scalar(
                select(Allocation.state).where(Allocation.uuid == theirs))
        self.assertEqual("allocating", state)
