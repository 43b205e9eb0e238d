"""What the server's fallbacks for private internals cost, in process.

A benchmark, not a test.  The server uses two pieces of its dependencies
beyond their public API, each with a public fallback it runs where the
piece is missing (``doc/source/internals/benchmarks.rst``, "Private
internals"); this measures both ways, alternated in one process so that
the machine's load weighs on both alike:

* **SQLAlchemy** (``server/db/sqlalchemy_private.py``): creates
  (``Prefer: wait``) and polls of :mod:`benchmarks.app_loop` (the
  application called as the front end calls it, this thread's CPU),
  with the driver-level statements (``USABLE`` True) and on SQLAlchemy's
  public ``Connection`` API (False), ``--repeats`` times each;
* **CPython's json** (``server/api/json_text.py``): a list of 1,000
  allocations, rendered with ``json.encoder.encode_basestring_ascii``
  and with ``json.dumps`` as ``json_text.string``, ``--rounds`` rounds
  of 5 lists each (SQLite; the rendering does not depend on the
  database).

Usage (from the repository root)::

    .venv/bin/python -m benchmarks.private_fallbacks            # ~5 min
    .venv/bin/python -m benchmarks.private_fallbacks --db sqlite

The run's JSON goes to a new file in ``benchmarks/results/`` (not
committed; ``--output``, see :mod:`benchmarks.rawruns`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any
from unittest import mock

from baremetal_allocclient.server.api import json_text
from baremetal_allocclient.server.db import sqlalchemy_private
from benchmarks import app_loop, floor, rawruns

LIST_SIZE = 1000


def sqlalchemy_cost(kind: str, args: argparse.Namespace
                    ) -> dict[str, Any]:
    """CPU ms of a create and a poll, driver-level and public API."""
    runs: dict[str, list[dict[str, float]]] = {"driver": [], "public": []}
    for _ in range(args.repeats):
        for path in runs:
            with mock.patch.object(sqlalchemy_private, "USABLE",
                                   path == "driver"):
                runs[path].append(
                    app_loop.measure_database(kind, args)["app_cpu_ms"])
            floor.log(f"{kind}: {path}: {runs[path][-1]}")
    medians = {path: {request: statistics.median(run[request]
                                                 for run in by_path)
                      for request in ("create", "get")}
               for path, by_path in runs.items()}
    return {"cpu_ms": medians, "runs": runs,
            "public_over_driver": {
                request: medians["public"][request]
                / medians["driver"][request]
                for request in ("create", "get")}}


def json_cost(args: argparse.Namespace) -> dict[str, Any]:
    """CPU ms of a list of 1,000, with each ``json_text.string``."""
    functions = {"encode_basestring_ascii": json_text.string,
                 "json.dumps": json.dumps}
    samples: dict[str, list[float]] = {name: [] for name in functions}
    bodies: dict[str, bytes] = {}
    workdir = tempfile.mkdtemp(prefix="baremetal-alloc-fallbacks-")
    try:
        with floor.databases("sqlite", workdir, LIST_SIZE + 2 * floor.WARMUP
                             ) as (server_db, _floor_db, _served_db), \
                app_loop.assembled(server_db) as app:
            for _ in range(LIST_SIZE):
                app.create()

            def one_list() -> bytes:
                status, answer = app.call("GET", "/v1/allocations",
                                          QUERY_STRING=f"limit={LIST_SIZE}")
                assert status.startswith("200"), status
                return answer

            for _ in range(3):
                one_list()  # warm
            for _ in range(args.rounds):
                for name, function in functions.items():
                    with mock.patch.object(json_text, "string", function):
                        start = time.thread_time()
                        for _ in range(5):
                            bodies[name] = one_list()
                        samples[name].append(
                            (time.thread_time() - start) * 1000 / 5)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if len(set(bodies.values())) != 1:
        raise RuntimeError("the two ways wrote different lists")
    medians = {name: statistics.median(values)
               for name, values in samples.items()}
    return {"cpu_ms": medians, "rounds": samples,
            "dumps_over_c": medians["json.dumps"]
            / medians["encode_basestring_ascii"]}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    floor.add_database_option(parser)
    parser.add_argument("--allocations", type=int, default=400,
                        help="creates of each app_loop run")
    parser.add_argument("--gets", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=4,
                        help="rounds of each app_loop run; of lists: x4")
    parser.add_argument("--repeats", type=int, default=3,
                        help="app_loop runs of each path, alternated")
    rawruns.add_option(parser, "private-fallbacks")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = datetime.datetime.now(datetime.timezone.utc)
    load_start = os.getloadavg()
    results: dict[str, Any] = {
        kind: sqlalchemy_cost(kind, args) for kind in args.db}
    list_args = argparse.Namespace(**{**vars(args),
                                      "rounds": 4 * args.rounds})
    results["json_list"] = json_cost(list_args)
    print(f"{'database':10}  {'request':8}  {'driver ms':>9}  "
          f"{'public ms':>9}  {'public/driver':>13}")
    for kind in args.db:
        cost = results[kind]
        for request in ("create", "get"):
            print(f"{kind:10}  {request:8}  "
                  f"{cost['cpu_ms']['driver'][request]:>9.3f}  "
                  f"{cost['cpu_ms']['public'][request]:>9.3f}  "
                  f"{cost['public_over_driver'][request]:>12.2f}x")
    listed = results["json_list"]
    print(f"list of {LIST_SIZE:,} (SQLite): encode_basestring_ascii "
          f"{listed['cpu_ms']['encode_basestring_ascii']:.2f} ms, "
          f"json.dumps {listed['cpu_ms']['json.dumps']:.2f} ms: "
          f"{listed['dumps_over_c']:.2f}x")
    floor.finish(args, started, load_start, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
