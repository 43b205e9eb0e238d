"""A commit lost with the connection: the answer says what happened.

The write is run for real on SQLite, then the connection is "lost"
while committing (``CommitOutcomeUnknown``), with the transaction
committed or rolled back underneath; a create or DELETE must answer
what the database shows, never "changed nothing" for a change that was
applied.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import pymysql
import testtools
from sqlalchemy.exc import OperationalError

from baremetal_allocclient.server.allocation.service import committing
from baremetal_allocclient.server.db.engine import CommitOutcomeUnknown
from baremetal_allocclient.tests.fixtures.wsgi import WsgiApp
from baremetal_allocclient.tests.unit.server._sqlite import SQLiteDatabase

LATEST = {"X-OpenStack-Ironic-API-Version": "latest"}
_LOST = OperationalError("COMMIT", {}, pymysql.err.OperationalError(
    2013, "Lost connection to server during query"))


class _Rollback(Exception):
    pass


class LostCommitTests(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.db = self.useFixture(SQLiteDatabase()).db
        self.real_write = self.db.write
        self.real_write_connection = self.db.write_connection
        self.client = self.useFixture(WsgiApp(self.db, backlog=4)).client

    def lose_commit(self, applied: bool) -> mock._patch[object]:
        """The next write (through ``write`` or ``write_connection``)
        runs, is committed (or not), then reports a lost connection while
        committing; later writes (the worker's) are left alone."""
        calls = []

        def losing(real_write: Callable[[], contextlib.AbstractContextManager[
                Any]]) -> Callable[[], Iterator[Any]]:
            @contextlib.contextmanager
            def write() -> Iterator[Any]:
                calls.append(1)
                if len(calls) > 1:
                    with real_write() as session:
                        yield session
                    return
                try:
                    with real_write() as session:
                        yield session
                        if not applied:
                            raise _Rollback()
                except _Rollback:
                    pass
                raise CommitOutcomeUnknown("lost") from _LOST
            return write
        return mock.patch.multiple(
            self.db, write=losing(self.real_write),
            write_connection=losing(self.real_write_connection))

    def allocations(self) -> list[str]:
        body = self.client.get("/v1/allocations", headers=LATEST).json
        assert body is not None
        return [a["uuid"] for a in body["allocations"]]

    def create(self) -> str:
        resp = self.client.post("/v1/allocations", headers=LATEST,
                                json={"resource_class": "rc"})
        self.assertEqual(201, resp.status_code, resp.data)
        assert resp.json is not None
        return str(resp.json["uuid"])

    def test_applied_create_answers_201(self) -> None:
        with self.lose_commit(applied=True):
            resp = self.client.post(
                "/v1/allocations", headers=LATEST,
                json={"resource_class": "rc", "name": "kept"})
        self.assertEqual(201, resp.status_code, resp.data)
        assert resp.json is not None
        self.assertEqual([resp.json["uuid"]], self.allocations())

    def test_create_not_applied_answers_changed_nothing(self) -> None:
        with self.lose_commit(applied=False):
            resp = self.client.post("/v1/allocations", headers=LATEST,
                                    json={"resource_class": "rc"})
        self.assertEqual(503, resp.status_code)
        self.assertIn(b"temporarily unavailable; retry later", resp.data)
        self.assertEqual([], self.allocations())

    def test_applied_delete_answers_204(self) -> None:
        uuid = self.create()
        with self.lose_commit(applied=True):
            resp = self.client.delete(f"/v1/allocations/{uuid}",
                                      headers=LATEST)
        self.assertEqual(204, resp.status_code, resp.data)
        self.assertEqual([], self.allocations())

    def test_delete_not_applied_answers_changed_nothing(self) -> None:
        uuid = self.create()
        with self.lose_commit(applied=False):
            resp = self.client.delete(f"/v1/allocations/{uuid}",
                                      headers=LATEST)
        self.assertEqual(503, resp.status_code)
        self.assertIn(b"temporarily unavailable; retry later", resp.data)
        self.assertEqual([uuid], self.allocations())

    def test_database_still_away_answers_may_or_may_not(self) -> None:
        uuid = self.create()
        unreachable = mock.patch.object(
            self.db, "read", side_effect=_LOST)
        quick = mock.patch.object(committing, "VERIFY_FOR", 0.3)
        with self.lose_commit(applied=True), unreachable, quick:
            resp = self.client.delete(f"/v1/allocations/{uuid}",
                                      headers=LATEST)
        self.assertEqual(503, resp.status_code)
        self.assertIn(b"may or may not have been applied", resp.data)
        self.assertNotIn(b"Lost connection", resp.data)
