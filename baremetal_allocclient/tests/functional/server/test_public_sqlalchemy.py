"""The server on SQLAlchemy's public API only: what it runs where a
private piece of ``db.sqlalchemy_private`` is missing or changed.

Every test of ``test_allocations`` again, and creates, polls, lists
(every page), candidate lists (an ``IN`` list) and deletes on SQLite,
PostgreSQL and MariaDB, with :data:`sqlalchemy_private.USABLE` False:
no driver-level connection is made (one would fail the request), every
statement runs through SQLAlchemy's ``Connection.execute``.
"""

from __future__ import annotations

import concurrent.futures
import uuid as uuidlib
from typing import Any, ClassVar
from unittest import mock

import testtools

from baremetal_allocclient.server.db import engine, sqlalchemy_private
from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)
from baremetal_allocclient.tests.functional.server import test_allocations


def public_api_only(owner: Any) -> None:
    """From ``setUpClass``: the class's servers run without SQLAlchemy's
    private pieces, and make no driver-level connection."""
    for patch in (
            mock.patch.object(sqlalchemy_private, "USABLE", False),
            mock.patch.object(engine, "DriverConnection", side_effect=(
                AssertionError("a driver-level connection was made")))):
        patch.start()
        owner.addClassCleanup(patch.stop)


class PublicAllocationTests(test_allocations.AllocationTests):
    """``test_allocations`` on SQLAlchemy's public API only."""

    @classmethod
    def setUpClass(cls) -> None:
        public_api_only(cls)
        super().setUpClass()


class _Requests:
    """Mixin: requests of every kind on the class's database ``kind``
    (None: SQLite)."""

    kind: ClassVar[str | None] = None
    server: ClassVar[InProcessServer]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        public_api_only(cls)
        cls.server = serve_for_class(cls, kind=cls.kind)

    def test_creates_polls_lists_and_deletes(self) -> None:
        case: Any = self
        server = self.server
        rc = "rc-" + uuidlib.uuid4().hex[:12]
        nodes = server.make_nodes(6, rc, traits=["CUSTOM_A"])
        names = [node["uuid"] for node in nodes]

        def create(index: int) -> dict[str, Any]:
            body: dict[str, Any] = {"resource_class": rc,
                                    "traits": ["CUSTOM_A"]}
            if index < 2:  # an IN list of candidates (which the
                # others do not take)
                body["candidate_nodes"] = names[:3]
            elif index < 4:
                body["candidate_nodes"] = names[3:]
            resp = server.request("POST", "/v1/allocations", body,
                                  headers={"Prefer": "wait=20"})
            case.assertEqual(201, resp.status_code, resp.text)
            return dict(resp.json())

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            made = list(pool.map(create, range(5)))
        case.assertEqual(["active"] * 5, [a["state"] for a in made], made)
        taken = [a["node_uuid"] for a in made]
        case.assertEqual(5, len(set(taken)), taken)  # no node twice
        case.assertTrue({taken[0], taken[1]} <= set(names[:3]), made)
        case.assertTrue({taken[2], taken[3]} <= set(names[3:]), made)
        for allocation in made:  # polls
            case.assertEqual(allocation["node_uuid"], server.request(
                "GET", f"/v1/allocations/{allocation['uuid']}"
            ).json()["node_uuid"])
        listed: list[str] = []
        path = f"/v1/allocations?resource_class={rc}&limit=2"
        while path:  # every page
            page = server.request("GET", path).json()
            listed += [a["uuid"] for a in page["allocations"]]
            path = page.get("next", "").partition("/v1")[2]
            path = "/v1" + path if path else ""
        case.assertEqual(sorted(a["uuid"] for a in made), sorted(listed))
        for allocation in made:
            resp = server.request(
                "DELETE", f"/v1/allocations/{allocation['uuid']}")
            case.assertEqual(204, resp.status_code, resp.text)
        case.assertEqual([], server.request(
            "GET", f"/v1/allocations?resource_class={rc}"
        ).json()["allocations"])


class SQLitePublicRequests(_Requests, testtools.TestCase):
    pass


class PostgreSQLPublicRequests(_Requests, testtools.TestCase):
    kind = "postgresql"


class MariaDBPublicRequests(_Requests, testtools.TestCase):
    kind = "mysql"
