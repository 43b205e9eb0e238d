"""The server's CPU for a DELETE beside a create's, on SQLite and
PostgreSQL (``--db``).

The WSGI application is called in a loop in this process (no HTTP
server, as the floor's profile does): ``--count`` creates with
``Prefer: wait`` (the reservation runs in the request thread, so its
CPU is counted), then the ``DELETE`` of each, ``--rounds`` times; the
figure is the calling thread's CPU (``time.thread_time``) per request,
and the ratio of a DELETE's to a create's, both measured in the same
run.  A fresh database each time; the nodes are reused round after
round.

    .venv/bin/python -m benchmarks.delete_cost
    .venv/bin/python -m benchmarks.delete_cost --db postgresql+psycopg://...

Run it on two commits (``PYTHONPATH`` first) to compare them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from typing import Any

import fixtures
from sqlalchemy import create_engine, insert

from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Node
from baremetal_allocclient.tests.fixtures.wsgi import WsgiApp
from benchmarks import rawruns

HEADERS = {"X-OpenStack-Ironic-API-Version": "latest", "Prefer": "wait=5"}


def _scratch(url: str | None, tmp: str) -> tuple[str, Any]:
    """A database URL of this run's own, and how to drop it."""
    if url is None:
        return "sqlite:///" + os.path.join(tmp, "delete.sqlite"), None
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    name = "bench_" + uuid.uuid4().hex[:12]
    with engine.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    return (engine.url.set(database=name).render_as_string(
        hide_password=False), lambda: _drop(engine, name))


def _drop(engine: Any, name: str) -> None:
    with engine.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE {name}")
    engine.dispose()


def _timed(calls: list[Any]) -> float:
    """Thread CPU per call, in ms; every answer must be a success."""
    began = time.thread_time()
    for call in calls:
        response = call()
        assert response.status_code in (201, 204), response.get_data()
    return (time.thread_time() - began) * 1000 / len(calls)


def measure(url: str, count: int, rounds: int) -> dict[str, Any]:
    """Per-request CPU of ``count`` creates and deletes, each round."""
    db = Database(url)
    db.upgrade()
    with db.write() as session:
        session.execute(insert(Node), [
            {"uuid": str(uuid.uuid4()), "name": f"node-{i}",
             "driver": "fake-hardware", "resource_class": "rc",
             "provision_state": "available", "power_state": "power off"}
            for i in range(count)])
    creates: list[float] = []
    deletes: list[float] = []
    with fixtures.Fixture() as owner:
        client = owner.useFixture(WsgiApp(db)).client
        for round_ in range(rounds + 1):  # the first warms up
            names = [f"r{round_}-{i}" for i in range(count)]
            create = _timed([
                (lambda n=n: client.post(
                    "/v1/allocations", headers=HEADERS,
                    json={"resource_class": "rc", "name": n}))
                for n in names])
            delete = _timed([
                (lambda n=n: client.delete(f"/v1/allocations/{n}",
                                           headers=HEADERS))
                for n in names])
            if round_:
                creates.append(create)
                deletes.append(delete)
    db.dispose()
    create_ms, delete_ms = statistics.median(creates), \
        statistics.median(deletes)
    return {"create_ms": creates, "delete_ms": deletes,
            "median_create_ms": create_ms, "median_delete_ms": delete_ms,
            "ratio": delete_ms / create_ms}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="a PostgreSQL or MariaDB server URL "
                        "(a database is made there); default SQLite")
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    rawruns.add_option(parser, "delete-cost")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        url, drop = _scratch(args.db, tmp)
        try:
            result = measure(url, args.count, args.rounds)
        finally:
            if drop is not None:
                drop()
    result.update(db=(args.db or "sqlite").split(":")[0], count=args.count,
                  load=os.getloadavg())
    print(f"{result['db']}: create {result['median_create_ms']:.3f} ms, "
          f"DELETE {result['median_delete_ms']:.3f} ms of thread CPU "
          f"(medians of {args.rounds} rounds of {args.count}): DELETE "
          f"{result['ratio']:.2f}x a create")
    rawruns.write_json(args.output, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
