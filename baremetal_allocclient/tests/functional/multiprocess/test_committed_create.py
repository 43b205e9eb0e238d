"""A create whose row is committed is answered 201, whatever follows.

``POST /v1/allocations`` with ``Prefer: wait`` commits the row, then
waits for it to settle and reads it back.  The database is cut (a
loopback TCP proxy) right after the commit, so that the wait ends with
the database unreachable.  Before, the read-back failure became 503
"the database is temporarily unavailable; retry later": the client (the
SDK does) retried and the server ended with two allocations, one active
on a node the caller never learned about.  Now the answer is 201 with
the allocation as stored (``allocating``), and exactly one allocation
exists once the database is back.
"""

from __future__ import annotations

import concurrent.futures
import time
import uuid
from typing import Any, ClassVar

import requests
import testtools
from sqlalchemy import create_engine, text
from testtools.content import text_content

from baremetal_allocclient.tests.functional.multiprocess import (
    _cluster,
    _proxy,
)

DELAY = 2  # serve --allocation-delay: the cut lands inside it
WAIT = 5  # Prefer: wait, longer than DELAY so the wait ends during the cut
_HEADERS = {"X-OpenStack-Ironic-API-Version": "latest",
            "Prefer": f"wait={WAIT}"}


class _CommittedCreateTests:
    """Mixin; ``kind`` is set by the concrete classes."""

    kind: ClassVar[str]

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        case: Any = self
        db, self.rc = _cluster.fleet(case.addCleanup, self.kind, 2)
        self.direct = create_engine(db.url)
        case.addCleanup(self.direct.dispose)
        self.proxy, proxied = _proxy.in_front_of(db.url)
        case.addCleanup(self.proxy.stop)
        self.server = _cluster.start(
            proxied,
            "commit-" + uuid.uuid4().hex[:6],
            "--allocation-delay", str(DELAY),
        )
        case.addCleanup(self.server.cleanup)
        # A failure shows what the server logged (its directory goes).
        case.addOnException(lambda _: case.addDetail(
            "server-log", text_content(self.server.log())))

    def _stored(self) -> int:
        """Allocations of this test's class, read around the proxy."""
        with self.direct.connect() as conn:
            return int(conn.execute(
                text("SELECT COUNT(*) FROM allocations "
                     "WHERE resource_class = :rc"), {"rc": self.rc},
            ).scalar_one())

    def _post(self) -> requests.Response:
        return requests.post(
            self.server.endpoint + "/v1/allocations",
            json={"resource_class": self.rc}, headers=_HEADERS, timeout=60,
        )

    def test_outage_after_the_commit_still_answers_201(self) -> None:
        case: Any = self
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            answer = pool.submit(self._post)
            deadline = time.monotonic() + DELAY
            while self._stored() == 0:  # committed: cut before the worker
                case.assertLess(time.monotonic(), deadline, "not stored")
                time.sleep(0.02)
            self.proxy.stop()
            resp = answer.result(timeout=60)
        self.proxy.start()
        case.assertEqual(201, resp.status_code, resp.text)
        body = resp.json()
        case.assertEqual("allocating", body["state"])
        final = _cluster.wait_settled(self.server, self.rc, timeout=60)
        case.assertEqual([(body["uuid"], "active")],
                         [(a["uuid"], a["state"]) for a in final])
        case.assertEqual(1, self._stored())


class PostgreSQLCommittedCreateTests(_CommittedCreateTests,
                                     testtools.TestCase):
    kind = "postgresql"


class MySQLCommittedCreateTests(_CommittedCreateTests, testtools.TestCase):
    kind = "mysql"
