"""The reference server for the benchmark: databases, fleets, processes.

Processes are started and stopped by the functional-test launcher
(``targets.serve_process``), so readiness checks, logs and clean-up match the
tests.  Fleets are enrolled with ``baremetal-alloc-server enroll`` from an
inventory file, which is also what the enrollment benchmark times.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import create_engine, text

from baremetal_allocclient.tests.functional import targets

SERVER = os.path.join(os.path.dirname(sys.executable),
                      "baremetal-alloc-server")
DEFAULT_PG_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
PG_URL_ENV = "BAREMETAL_ALLOC_TEST_POSTGRESQL_URL"


def server(*args: str, timeout: float = 3600) -> str:
    """Run a ``baremetal-alloc-server`` sub-command; return its stdout."""
    proc = subprocess.run([SERVER, *args], capture_output=True, text=True,
                          timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {proc.stderr[-2000:]}")
    return proc.stdout


def write_inventory(path: str, count: int, resource_class: str,
                    prefix: str = "node") -> None:
    """A bifrost-style JSON inventory of ``count`` fake-hardware nodes."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("{")
        for index in range(count):
            entry = {"driver": "fake-hardware",
                     "resource_class": resource_class,
                     "properties": {"cpus": 8, "memory_mb": 32768}}
            sep = "," if index else ""
            handle.write(f'{sep}"{prefix}-{index}": {json.dumps(entry)}\n')
        handle.write("}\n")


def enroll(db: str, count: int, resource_class: str, workdir: str,
           prefix: str = "node") -> float:
    """Enroll ``count`` nodes from a fresh inventory file; seconds taken
    by the ``enroll`` command (file writing excluded)."""
    path = os.path.join(workdir, f"inventory-{prefix}-{count}.json")
    write_inventory(path, count, resource_class, prefix)
    start = time.perf_counter()
    server("enroll", "--db", db, path)
    elapsed = time.perf_counter() - start
    os.unlink(path)
    return elapsed


def start(db: str, name: str = "bench", workers: int | None = None,
          extra: Sequence[str] = (), wrapper: Sequence[str] = ()
          ) -> targets.Target:
    """``serve`` on a free port against ``db`` (already upgraded), run by
    ``wrapper`` when given (a command line that ends where the server's
    begins)."""
    workdir = tempfile.mkdtemp(prefix="baremetal-alloc-bench-")

    def command(port: int) -> list[str]:
        argv = [*wrapper, SERVER, "--log-level", "WARNING", "serve", "--host",
                "127.0.0.1", "--port", str(port), "--db", db,
                "--conductor-name", name]
        if workers is not None:
            argv += ["--workers", str(workers)]
        return argv + list(extra)

    return targets.serve_process("reference", workdir, command, lambda: "")


@contextlib.contextmanager
def postgresql_database(admin_url: str | None = None,
                        template: str | None = None) -> Iterator[str]:
    """A new PostgreSQL database, dropped afterwards: empty, or a copy of
    the database at URL ``template`` (which nobody may be connected to)."""
    admin = admin_url or os.environ.get(PG_URL_ENV) or DEFAULT_PG_ADMIN_URL
    base, _, _ = admin.rpartition("/")
    name = "bench_alloc_" + uuid.uuid4().hex[:10]
    copy = f' TEMPLATE "{template.rpartition("/")[2]}"' if template else ""
    engine = create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"{copy}'))
    try:
        yield f"{base}/{name}"
    finally:
        with engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" '
                              f"WITH (FORCE)"))
        engine.dispose()


def seed_allocations(db: str, resource_class: str) -> int:
    """Give every free node an ``active`` allocation, straight in SQL.

    Only used to have 100k allocations to list: creating them through the
    API would take minutes and measure nothing new.  The rows are what the
    worker writes on success (node and allocation point at each other).
    """
    engine = create_engine(db)
    now = time.strftime("%Y-%m-%d %H:%M:%S")
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO allocations (id, uuid, name, node_id, state, "
            "resource_class, traits, candidate_nodes, extra, "
            "conductor_affinity, created_at, updated_at) "
            "SELECT id, :prefix || printf('%012d', id), NULL, id, 'active', "
            "resource_class, '[]', '[]', '{}', 'bench', :now, :now "
            "FROM nodes WHERE allocation_id IS NULL AND "
            "instance_uuid IS NULL"
        ), {"prefix": "00000000-0000-4000-8000-", "now": now})
        conn.execute(text(
            "UPDATE nodes SET allocation_id = id, instance_uuid = "
            "(SELECT uuid FROM allocations WHERE allocations.id = nodes.id) "
            "WHERE allocation_id IS NULL AND instance_uuid IS NULL"
        ))
        count: Any = conn.execute(
            text("SELECT count(*) FROM allocations")).scalar()
    engine.dispose()
    return int(count)


KEPT_PREFIX = "kept"


def keep_allocations(db: str, count: int, resource_class: str,
                     workdir: str) -> None:
    """A fleet in use: enroll ``count`` nodes and give each an ``active``
    allocation of ``resource_class`` on a deployed node, straight in SQL
    (what a worker writes, then a deployment).  Allocations kept in
    place should cost a create nothing; the nodes are out of every
    candidate window, as deployed nodes are.  Enroll the measured fleet
    afterwards: these take the lowest ids."""
    enroll(db, count, resource_class, workdir, prefix=KEPT_PREFIX)
    engine = create_engine(db)
    now = time.strftime("%Y-%m-%d %H:%M:%S")
    kept = {"kept": f"{KEPT_PREFIX}-%"}
    with engine.begin() as conn:
        node_ids = conn.execute(text(
            "SELECT id FROM nodes WHERE name LIKE :kept"), kept).scalars()
        conn.execute(text(
            "INSERT INTO allocations (uuid, node_id, state, resource_class,"
            " traits, candidate_nodes, extra, conductor_affinity, "
            "created_at, updated_at) VALUES (:uuid, :node, 'active', :rc, "
            "'[]', '[]', '{}', 'bench', :now, :now)"), [
                {"uuid": str(uuid.uuid4()), "node": node_id,
                 "rc": resource_class, "now": now}
                for node_id in node_ids])
        conn.execute(text(
            "UPDATE nodes SET provision_state = 'active', allocation_id = "
            "(SELECT id FROM allocations WHERE node_id = nodes.id), "
            "instance_uuid = "
            "(SELECT uuid FROM allocations WHERE node_id = nodes.id) "
            "WHERE name LIKE :kept"), kept)
    engine.dispose()


def analyze(db: str) -> None:
    """Bring PostgreSQL's statistics up to date after a bulk load, as
    autovacuum keeps them on a database in use (and so that its run does
    not fall inside a measurement); SQLite has none to bring."""
    if db.startswith("sqlite"):
        return
    engine = create_engine(db, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text("VACUUM ANALYZE"))
    engine.dispose()


def explain_selection(db: str, resource_class: str) -> list[str]:
    """The plan of the exact query the workers run to find candidates."""
    from baremetal_allocclient.server.allocation import matching, selection

    request = selection.Request(resource_class=resource_class)
    filters = tuple(selection.active_filters(request))
    query = matching.candidate_query(filters).params(
        **matching.filter_params(request), w_pivot=1,
        w_limit=matching.CANDIDATE_WINDOW)
    engine = create_engine(db)
    try:
        compiled = query.compile(engine, compile_kwargs={
            "literal_binds": True})
        prefix = ("EXPLAIN QUERY PLAN " if db.startswith("sqlite")
                  else "EXPLAIN ")
        with engine.connect() as conn:
            rows = conn.execute(text(prefix + str(compiled))).fetchall()
        plan = [str(row[-1]) for row in rows]
        return [f"-- {' '.join(str(compiled).split())}", *plan]
    finally:
        engine.dispose()
