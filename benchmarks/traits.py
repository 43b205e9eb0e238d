"""A create with traits, as the fleet grows.

A benchmark, not a test.  For each database (``--db``) and each fleet
size (``--fleet``): a fresh database enrolled with that many nodes,
every one holding the traits of ``--traits`` (all of them: the common
case of a class of alike machines); then the application, built as
``serve`` builds it, is called in this thread as the front end calls it
(:mod:`benchmarks.app_loop`) with ``--rounds`` rounds of ``--creates``
creates whose body asks for those traits (``Prefer: wait``, each
answered ``active``).  The figures are this thread's CPU per create
and, on PostgreSQL, the CPU of the database's backends serving it
(:class:`benchmarks.floor.DatabaseCpu`), medians over the rounds.  The
fleet's size should not move them: the traits are looked up for the
nodes at hand (see "A trait looked up for the node at hand" in
``doc/source/internals/benchmarks.rst``).

Usage (from the repository root)::

    .venv/bin/python -m benchmarks.traits                 # ~2 min
    .venv/bin/python -m benchmarks.traits --db sqlite --fleet 1000 10000

The run's JSON goes to a new file in ``benchmarks/results/`` (not
committed; ``--output``, see :mod:`benchmarks.rawruns`).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import Any

from benchmarks import app_loop, floor, rawruns, reference

TRAITS = ("HW_CPU_X86_VMX", "HW_CPU_X86_AVX2", "CUSTOM_GPU")


@contextlib.contextmanager
def fleet(kind: str, nodes: int, traits: Sequence[str]) -> Iterator[str]:
    """A migrated database of ``kind`` with ``nodes`` nodes of class
    ``floor.RC``, each holding ``traits``; its URL."""
    workdir = tempfile.mkdtemp(prefix="baremetal-alloc-traits-")
    try:
        with contextlib.ExitStack() as stack:
            url = (f"sqlite:///{workdir}/fleet.db" if kind == "sqlite"
                   else stack.enter_context(reference.postgresql_database()))
            floor.log(f"{kind}: enrolling {nodes} nodes with traits")
            inventory = os.path.join(workdir, "inventory.json")
            with open(inventory, "w", encoding="utf-8") as handle:
                json.dump({f"node-{index}": {
                    "driver": "fake-hardware", "resource_class": floor.RC,
                    "traits": list(traits),
                    "properties": {"cpus": 8, "memory_mb": 32768}}
                    for index in range(nodes)}, handle)
            reference.server("db", "upgrade", "--db", url)
            reference.server("enroll", "--db", url, inventory)
            reference.analyze(url)
            yield url
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def measure(kind: str, url: str, args: argparse.Namespace
            ) -> dict[str, Any]:
    """CPU ms per create with the traits (this thread's, and the
    database backends' on PostgreSQL), rounds and medians."""
    body = json.dumps({"resource_class": floor.RC,
                       "traits": list(args.traits)}).encode()
    rounds: dict[str, list[float]] = {"create": [], "database": []}
    with app_loop.assembled(url) as app, \
            floor.database_cpu(kind, (url,)) as (database,):
        def create() -> None:
            status, answer = app.call(
                "POST", "/v1/allocations", body,
                HTTP_PREFER=f"wait={floor.PREFER_WAIT}")
            if json.loads(answer).get("state") != "active":
                raise RuntimeError(f"create: {status}: {answer[:500]!r}")

        for _ in range(floor.WARMUP):
            create()
        for _ in range(args.rounds):
            backends = database.seconds() if database else 0.0
            start = time.thread_time()
            for _ in range(args.creates):
                create()
            per_create = 1000.0 / args.creates
            rounds["create"].append((time.thread_time() - start)
                                    * per_create)
            if database:
                rounds["database"].append((database.seconds() - backends)
                                          * per_create)
    return {"create_cpu_ms": statistics.median(rounds["create"]),
            "database_cpu_ms": (statistics.median(rounds["database"])
                                if database else None),
            "rounds": rounds}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    floor.add_database_option(parser)
    parser.add_argument("--fleet", type=int, nargs="+",
                        default=[1000, 10000],
                        help="fleet sizes (nodes), each on a fresh database")
    parser.add_argument("--traits", nargs="+", default=list(TRAITS))
    parser.add_argument("--creates", type=int, default=100,
                        help="creates per round")
    parser.add_argument("--rounds", type=int, default=3)
    rawruns.add_option(parser, "traits")
    args = parser.parse_args(argv)
    needed = args.creates * args.rounds + floor.WARMUP
    if min(args.fleet) < needed:
        parser.error(f"--fleet: at least {needed} nodes (one per create)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = datetime.datetime.now(datetime.timezone.utc)
    load_start = os.getloadavg()
    results: dict[str, Any] = {}
    for kind in args.db:
        results[kind] = {}
        for nodes in args.fleet:
            with fleet(kind, nodes, args.traits) as url:
                results[kind][str(nodes)] = measure(kind, url, args)
    print(f"{'database':10}  {'nodes':>7}  {'create CPU ms':>13}  "
          f"{'database CPU ms':>15}  (traits: {', '.join(args.traits)})")
    for kind, by_size in results.items():
        for nodes, result in by_size.items():
            backends = result["database_cpu_ms"]
            print(f"{kind:10}  {int(nodes):>7}  "
                  f"{result['create_cpu_ms']:>13.3f}  "
                  + (f"{backends:>15.3f}" if backends is not None
                     else f"{'--':>15}"))
    floor.finish(args, started, load_start, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
