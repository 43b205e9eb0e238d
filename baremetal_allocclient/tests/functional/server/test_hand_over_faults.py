"""A create that fails between storing its row and handing it to a
worker leaves nothing ``allocating`` and gives its worker slot back.

Issue 52: a ``Prefer: wait`` of a few hundred digits raised after the
row was stored; the allocation stayed ``allocating`` for good and its
slot was never returned, so three such requests made every later create
a 503 on ``--workers 1 --pending 2``.  Here an exception is injected at
each step of the create between the insert and the hand-over (and in
the hand-over itself); after each the row is ``error`` (or was never
committed), every slot is free, and the next create is served.  The
take-over round, which would re-queue a stranded row, is off, so
nothing here relies on it.  On SQLite, PostgreSQL and MariaDB.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

import fixtures
import testtools

from baremetal_allocclient.server.allocation import reservation
from baremetal_allocclient.server.allocation.wait_permits import WaitPermits
from baremetal_allocclient.server.allocation.workers import (
    UNEXPECTED_FAILURE,
    AllocationWorkers,
)
from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)

SLOTS = 2  # --workers 1 --pending 1


class Injected(Exception):
    """The fault a test injects (a bug's stand-in)."""


def _raises(*_args: Any, **_kwargs: Any) -> Any:
    raise Injected("injected fault")


class _HandOverFaults:
    """Mixin; ``kind`` names the database."""

    kind: ClassVar[str]
    server: ClassVar[InProcessServer]
    rc: ClassVar[str]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        cls.server = serve_for_class(
            cls, "--workers", "1", "--pending", "1", "--takeover-interval",
            "0", "--db-connections", "4", kind=cls.kind)
        cls.rc = "rc-" + uuid.uuid4().hex[:8]
        cls.server.make_nodes(3, cls.rc)

    @property
    def workers(self) -> AllocationWorkers:
        return self.server.assembly.workers

    def _create(self, name: str, wait: bool) -> Any:
        return self.server.request(
            "POST", "/v1/allocations",
            {"resource_class": self.rc, "name": name},
            headers={"Prefer": "wait=5"} if wait else {})

    def _inject(self, patch: fixtures.Fixture, wait: bool = False,
                stored: bool = True) -> None:
        """Create once with ``patch`` in place, then check what is left."""
        test: Any = self
        name = "fault-" + uuid.uuid4().hex[:8]
        with patch:
            response = self._create(name, wait)
        test.assertEqual(500, response.status_code, response.text)
        fault = json.loads(response.json()["error_message"])["faultstring"]
        test.assertNotIn("injected", fault)
        test.assertEqual(SLOTS, self.workers.free_slots())
        found = self.server.request("GET", f"/v1/allocations/{name}")
        if not stored:  # refused before the commit: nothing is left
            test.assertEqual(404, found.status_code, found.text)
        else:
            test.assertEqual(200, found.status_code, found.text)
            test.assertEqual(("error", UNEXPECTED_FAILURE),
                             (found.json()["state"],
                              found.json()["last_error"]))
            self.server.expect(204, "DELETE", f"/v1/allocations/{name}")
        self._serves_the_next_create(wait)

    def _serves_the_next_create(self, wait: bool) -> None:
        test: Any = self
        name = "next-" + uuid.uuid4().hex[:8]
        response = self._create(name, wait)
        test.assertEqual(201, response.status_code, response.text)
        done = self.server.wait_allocation(name)
        test.assertEqual("active", done["state"], done)
        self.server.expect(204, "DELETE", f"/v1/allocations/{name}")
        test.assertEqual(SLOTS, self.workers.free_slots())

    def _method(self, owner: Any, name: str,
                replacement: Callable[..., Any] = _raises
                ) -> fixtures.Fixture:
        return fixtures.MockPatchObject(owner, name, replacement)

    def test_after_the_insert_before_the_commit(self) -> None:
        insert = reservation.insert_allocation

        def insert_then_fail(session: Any, allocation: Any) -> None:
            insert(session, allocation)
            raise Injected("after the insert")

        self._inject(self._method(reservation, "insert_allocation",
                                  insert_then_fail), stored=False)

    def test_making_the_job(self) -> None:
        self._inject(self._method(AllocationWorkers, "job_for"))

    def test_taking_a_wait_permit(self) -> None:
        self._inject(self._method(WaitPermits, "try_acquire"), wait=True)

    def test_the_pool_refusing_the_job(self) -> None:
        pool = self.workers._pool  # (the pool itself fails)
        self._inject(self._method(pool, "submit"))

    def test_the_backend_failing_while_the_request_waits(self) -> None:
        backend = self.workers.backend
        test: Any = self
        name = "fault-" + uuid.uuid4().hex[:8]
        with self._method(backend, "allocate"):
            response = self._create(name, wait=True)
        # The worker's own failure path: answered as settled, in error.
        test.assertEqual(201, response.status_code, response.text)
        test.assertEqual(("error", UNEXPECTED_FAILURE),
                         (response.json()["state"],
                          response.json()["last_error"]))
        test.assertEqual(SLOTS, self.workers.free_slots())
        self.server.expect(204, "DELETE", f"/v1/allocations/{name}")
        self._serves_the_next_create(wait=True)


class SqliteHandOverFaults(_HandOverFaults, testtools.TestCase):
    kind = "sqlite"


class PostgresqlHandOverFaults(_HandOverFaults, testtools.TestCase):
    kind = "postgresql"


class MysqlHandOverFaults(_HandOverFaults, testtools.TestCase):
    kind = "mysql"
