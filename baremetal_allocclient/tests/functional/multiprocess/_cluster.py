"""Several ``serve`` processes on one database, and bursts of clients."""

from __future__ import annotations

import concurrent.futures
import signal
import tempfile
import time
import uuid as uuidlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

import requests

from baremetal_allocclient.tests.fixtures import databases, launcher
from baremetal_allocclient.tests.fixtures.launcher import (
    ServerProcess,
)

_HEADERS = {"X-OpenStack-Ironic-API-Version": "latest"}
#: Short intervals so that take-over happens within seconds in tests.
FAST = (
    "--heartbeat-interval", "0.5",
    "--heartbeat-timeout", "3",
    "--takeover-interval", "1",
)
#: Database connections per process.  Test classes on the other stestr
#: worker share the same PostgreSQL (max_connections 100) at the same
#: time, so every process stays well inside its share.
DB_CONNECTIONS = ("--db-connections", "8")


class ClusterCase:
    """Mixin for tests of several processes on one scratch database of
    ``kind``: the database (schema created) and a work directory per
    class; a fresh resource class ``rc`` and name ``prefix`` per test."""

    kind: ClassVar[str]
    db: ClassVar[databases.ScratchDatabase]
    workdir: ClassVar[str]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        cls.db, cls.workdir = scratch(
            cls.addClassCleanup, cls.kind)  # type: ignore[attr-defined]

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        self.case: Any = self
        self.rc = "rc-" + uuidlib.uuid4().hex[:12]
        self.prefix = uuidlib.uuid4().hex[:6]


def scratch(add_cleanup: Callable[..., object], kind: str
            ) -> tuple[databases.ScratchDatabase, str]:
    """A scratch database of ``kind`` with the schema, and a work
    directory; ``add_cleanup`` (a test's or a class's) removes both."""
    db = databases.scratch(add_cleanup, kind, schema=True)
    tmp = tempfile.TemporaryDirectory(prefix="bm-alloc-cluster-")
    add_cleanup(tmp.cleanup)
    return db, tmp.name


def fleet(add_cleanup: Callable[..., object], kind: str, nodes: int
          ) -> tuple[databases.ScratchDatabase, str]:
    """:func:`scratch` with ``nodes`` available nodes enrolled in a fresh
    resource class; (database, resource class)."""
    db, workdir = scratch(add_cleanup, kind)
    rc = "rc-" + uuidlib.uuid4().hex[:12]
    enroll(db.url, workdir, nodes, rc)
    return db, rc


def enroll(db_url: str, directory: str, count: int, rc: str) -> None:
    """``count`` available nodes of resource class ``rc``, via ``enroll``."""
    launcher.enroll(db_url, directory, {
        f"{rc}-{i}": {"driver": "fake-hardware", "resource_class": rc}
        for i in range(count)
    })


def start(db_url: str, name: str, *extra: str) -> ServerProcess:
    """One ``serve`` process named ``name``; the caller cleans it up."""
    server = ServerProcess(db_url)
    try:
        server.start("--conductor-name", name, *DB_CONNECTIONS, *extra,
                     timeout=60)
    except BaseException:
        server.cleanup()
        raise
    return server


def kill(server: ServerProcess) -> None:
    """SIGKILL: no chance to hand anything back."""
    assert server.proc is not None
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(timeout=10)


def post_many(
    servers: Sequence[ServerProcess], count: int, body: dict[str, Any],
    threads: int = 32,
) -> list[tuple[int, Any]]:
    """``count`` POST /v1/allocations at once, spread over ``servers``;
    (status, JSON body) for each."""

    def one(index: int) -> tuple[int, Any]:
        server = servers[index % len(servers)]
        resp = requests.post(
            server.endpoint + "/v1/allocations", json=body,
            headers=_HEADERS, timeout=120,
        )
        try:
            return resp.status_code, resp.json()
        except ValueError:
            return resp.status_code, resp.text

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        return list(pool.map(one, range(count)))


def _all_pages(server: ServerProcess, path: str, key: str, rc: str
               ) -> list[dict[str, Any]]:
    """Every item of a collection for resource class ``rc`` (follows
    ``next``, which this server keeps filtered)."""
    result: list[dict[str, Any]] = []
    url: str | None = f"{server.endpoint}{path}?resource_class={rc}&limit=1000"
    while url:
        resp = requests.get(url, headers=_HEADERS, timeout=60)
        resp.raise_for_status()
        body = resp.json()
        result.extend(body[key])
        url = body.get("next")
    return result


def allocations(server: ServerProcess, rc: str) -> list[dict[str, Any]]:
    """Every allocation of resource class ``rc``."""
    return _all_pages(server, "/v1/allocations", "allocations", rc)


def wait_settled(
    server: ServerProcess, rc: str, timeout: float
) -> list[dict[str, Any]]:
    """Poll until no allocation of ``rc`` is ``allocating``."""
    deadline = time.monotonic() + timeout
    while True:
        found = allocations(server, rc)
        if all(a["state"] != "allocating" for a in found):
            return found
        if time.monotonic() > deadline:
            stuck = [a["uuid"] for a in found if a["state"] == "allocating"]
            raise AssertionError(f"{len(stuck)} still allocating: {stuck}")
        time.sleep(0.2)


def nodes(server: ServerProcess, rc: str) -> list[dict[str, Any]]:
    """Every node of resource class ``rc``, with details."""
    return _all_pages(server, "/v1/nodes/detail", "nodes", rc)


def finished_in_logs(
    servers: Mapping[str, ServerProcess], expected: Iterable[str] = (),
    timeout: float = 5.0,
) -> dict[str, list[str]]:
    """Allocation UUID -> names of the processes whose log says they
    finished it (a restarted process appends to the same log).

    A process logs an allocation as finished just after committing it,
    so a test that has seen ``expected`` settled may read the logs a
    moment before the last line is written (seen on a loaded machine):
    this reads them again, for up to ``timeout`` seconds, until every
    one of ``expected`` is there."""
    deadline = time.monotonic() + timeout
    while True:
        seen = _finished_now(servers)
        if set(expected) <= seen.keys() or time.monotonic() >= deadline:
            return seen
        time.sleep(0.05)


def _finished_now(
    servers: Mapping[str, ServerProcess],
) -> dict[str, list[str]]:
    seen: dict[str, list[str]] = {}
    for name, server in servers.items():
        for line in server.log().splitlines():
            marker = "Allocation "
            if " finished: " not in line or marker not in line:
                continue
            uuid = line.split(marker, 1)[1].split(" ", 1)[0]
            seen.setdefault(uuid, []).append(name)
    return seen
