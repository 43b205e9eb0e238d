"""The server's application against the SQL floor, in one loop, no HTTP.

A benchmark, not a test.  For each database (``--db sqlite postgresql``),
in this process and this thread: the WSGI application built as ``serve``
builds it (``server.assembly``, its background services started) is
called directly with ``--allocations`` creates (``Prefer: wait``, each
answered ``active``) and ``--gets`` polls, and :mod:`benchmarks.floor_sql`
does the same requests' SQL on a copy of the database, in alternating
rounds.  The figures are this thread's CPU per request (medians over the
rounds), and their ratio.

:mod:`benchmarks.floor` measures the server served, one request at a
time through its front end; here the same code runs back to back with
its caches warm, as the SQL floor always runs.  The difference between
the two is what serving costs the application (see "The floor, served"
in ``doc/source/internals/benchmarks.rst``).

Usage (from the repository root)::

    .venv/bin/python -m benchmarks.app_loop            # both, ~1 min
    .venv/bin/python -m benchmarks.app_loop --db sqlite

The run's JSON goes to a new file in ``benchmarks/results/`` (not
committed; ``--output``, see :mod:`benchmarks.rawruns`).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid as uuidlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from baremetal_allocclient.server import assembly, cmd
from baremetal_allocclient.server.db.engine import Database
from benchmarks import floor, floor_sql, load, rawruns

HEADERS = {"HTTP_" + name.upper().replace("-", "_"): value
           for name, value in load.HEADERS.items()}


class App:
    """The assembled application, called as the front end calls it."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def call(self, method: str, path: str, body: bytes = b"",
             **headers: str) -> tuple[str, bytes]:
        environ: dict[str, Any] = {
            "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "6385",
            "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
            "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr, "CONTENT_LENGTH": str(len(body)),
            **HEADERS, **headers}
        if body:
            environ["CONTENT_TYPE"] = "application/json"
        status: list[str] = []

        def start_response(line: str, _headers: Any,
                           _exc_info: Any = None) -> None:
            status.append(line)

        answer = b"".join(self.app(environ, start_response))
        return status[0], answer

    def create(self) -> str:
        """POST an allocation with ``Prefer: wait``; its UUID."""
        status, answer = self.call(
            "POST", "/v1/allocations",
            json.dumps({"resource_class": floor.RC}).encode(),
            HTTP_PREFER=f"wait={floor.PREFER_WAIT}")
        body = json.loads(answer)
        if not status.startswith("201") or body.get("state") != "active":
            raise RuntimeError(f"create: {status}: {answer[:500]!r}")
        return str(body["uuid"])

    def get(self, allocation_uuid: str) -> None:
        status, answer = self.call("GET", f"/v1/allocations/{allocation_uuid}")
        if not status.startswith("200"):
            raise RuntimeError(f"get: {status}: {answer[:500]!r}")


@contextlib.contextmanager
def assembled(url: str, options: Sequence[str] = ()) -> Iterator[App]:
    """The application of ``serve --db url [options]``, its services
    running."""
    args = cmd.parse(["--log-level", "WARNING", "serve", "--db", url,
                      "--conductor-name", "app-loop", *options])
    db = Database(url, getattr(args, "db_connections", None))
    built = assembly.build(db, args)
    built.start()
    try:
        yield App(built.app)
    finally:
        built.stop()
        db.dispose()


def cpu_ms(count: int, operation: Callable[[int], object]) -> float:
    """This thread's CPU ms per call of ``operation(i)``."""
    start = time.thread_time()
    for index in range(count):
        operation(index)
    return (time.thread_time() - start) * 1000.0 / count


def measure_database(kind: str, args: argparse.Namespace) -> dict[str, Any]:
    """The application and the SQL floor on one kind of database."""
    workdir = tempfile.mkdtemp(prefix="baremetal-alloc-app-loop-")
    samples: dict[str, dict[str, list[float]]] = {
        part: {"create": [], "get": []} for part in ("app", "sql")}
    try:
        with floor.databases(kind, workdir, args.allocations
                             + 2 * floor.WARMUP) as (server_db, floor_db, _):
            sql = floor_sql.Floor(floor_db, floor.RC)
            floor_made: list[str] = []

            def floor_create(_index: int) -> None:
                floor_made.append(str(uuidlib.uuid4()))
                sql.create_one(floor_made[-1])

            try:
                with assembled(server_db) as app:
                    made = [app.create() for _ in range(floor.WARMUP)]
                    cpu_ms(floor.WARMUP, floor_create)
                    for count in floor.shares(args.allocations, args.rounds):
                        samples["app"]["create"].append(cpu_ms(
                            count, lambda _i: made.append(app.create())))
                        samples["sql"]["create"].append(
                            cpu_ms(count, floor_create))
                    for count in floor.shares(args.gets, args.rounds):
                        samples["app"]["get"].append(cpu_ms(
                            count, lambda i: app.get(made[i % len(made)])))
                        samples["sql"]["get"].append(cpu_ms(
                            count, lambda i: sql.get(
                                floor_made[i % len(floor_made)])))
            finally:
                sql.db.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    medians = {part: {request: statistics.median(values)
                      for request, values in by_request.items()}
               for part, by_request in samples.items()}
    return {"app_cpu_ms": medians["app"], "sql_floor_ms": medians["sql"],
            "ratio": {request: medians["app"][request]
                      / medians["sql"][request]
                      for request in ("create", "get")},
            "rounds": samples}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    floor.add_database_option(parser)
    parser.add_argument("--allocations", type=int, default=1000)
    parser.add_argument("--gets", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    rawruns.add_option(parser, "app-loop")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = datetime.datetime.now(datetime.timezone.utc)
    load_start = os.getloadavg()
    results = {kind: measure_database(kind, args) for kind in args.db}
    print(f"{'database':10}  {'request':8}  {'application CPU ms':>18}  "
          f"{'SQL floor ms':>12}  {'ratio':>6}")
    for kind, result in results.items():
        for request in ("create", "get"):
            print(f"{kind:10}  {request:8}  "
                  f"{result['app_cpu_ms'][request]:>18.3f}  "
                  f"{result['sql_floor_ms'][request]:>12.3f}  "
                  f"{result['ratio'][request]:>5.1f}x")
    floor.finish(args, started, load_start, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
