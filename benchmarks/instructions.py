"""Instructions per request: the server against its floors, counted.

A benchmark, not a test.  :mod:`benchmarks.floor` times the server's CPU
per request against its floors; on a shared machine the ratio moves with
the load and with the machine.  This counts instead: valgrind counts the
machine instructions a process executes in user space, which for the
same code and inputs is the same count however busy the machine is.
For each database (``--db sqlite postgresql``):

* **Served** (valgrind's callgrind): the server (``serve``), the HTTP
  floor and the served floor of :mod:`benchmarks.floor`
  (:mod:`benchmarks.hello_serve`) each run under valgrind on their own
  copy of the enrolled database; a client outside valgrind warms each
  up, then callgrind's counters are zeroed (``callgrind_control -z``),
  ``N2`` creates (``Prefer: wait``) or ``GETS`` polls sent, and the
  counters dumped (``-d``): every thread of the process, nothing else.
* **In a loop** (valgrind's cachegrind): the SQL floor
  (:mod:`benchmarks.floor_sql`) and the application called as the front
  end calls it (:mod:`benchmarks.app_loop`), in child processes that
  make ``N1`` creates, ``N2`` creates, or ``N1`` creates and ``GETS``
  polls, each on its own copy of the database: a create is (count of
  the second - count of the first) / (N2 - N1), a poll (third - first)
  / GETS, so start-up, imports and warm-up cancel.  The children run
  with ``PYTHONHASHSEED=0`` and ``random`` seeded.

**ratio** = server / (HTTP floor + SQL floor), as the timed one;
**served ratio** = server / served floor.

What is not counted: the kernel's work for the system calls (SQLite's
writes, the sockets) and, on PostgreSQL, the database server's; nor how
long an instruction takes, which is what the timed benchmark adds (its
SQL floor runs in a tight loop, with warm caches).  The processes'
periodic services (heartbeats, take-over, the waiting line's rounds) are
given hour-long intervals, so that a longer run does not count more of
their rounds.  Lists are not measured here.

Usage (from the repository root; valgrind on ``PATH``)::

    .venv/bin/python -m benchmarks.instructions            # ~10 min
    .venv/bin/python -m benchmarks.instructions --db sqlite
    .venv/bin/python -m benchmarks.instructions --loops-only  # ~2 min

The run's JSON goes to a new file in ``benchmarks/results/`` (not
committed; ``--output``, see :mod:`benchmarks.rawruns`).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import datetime
import glob
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid as uuidlib
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks import floor, rawruns, reference

PARTS = ("app", "sql")  # in a loop
REQUESTS = ("create", "get")
#: Every periodic service of the application at most once an hour.
QUIET = ("--heartbeat-interval", "3600", "--heartbeat-timeout", "7200",
         "--takeover-interval", "3600", "--queue-interval", "3600")
_COUNT = re.compile(r"I\s+refs:\s+([\d,]+)")


def child(part: str, db: str, creates: int, gets: int) -> None:
    """The requests of one counted run (in the process valgrind runs)."""
    random.seed(0)
    if part == "app":
        from benchmarks import app_loop

        with app_loop.assembled(db, QUIET) as app:
            made = [app.create() for _ in range(floor.WARMUP + creates)]
            for index in range(gets):
                app.get(made[index % len(made)])
        return
    from benchmarks import floor_sql

    sql = floor_sql.Floor(db, floor.RC)
    try:
        made = []
        for _ in range(floor.WARMUP + creates):
            made.append(str(uuidlib.uuid4()))
            sql.create_one(made[-1])
        for index in range(gets):
            sql.get(made[index % len(made)])
    finally:
        sql.db.close()


def counted(part: str, db: str, creates: int, gets: int, log: str) -> int:
    """Instructions the child process of one run executed."""
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no",
               "--cachegrind-out-file=/dev/null", f"--log-file={log}",
               sys.executable, "-m", "benchmarks.instructions", "--child",
               part, db, str(creates), str(gets)]
    environ = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run(command, check=True, env=environ,
                   cwd=os.path.dirname(floor.HERE))
    with open(log) as stream:
        found = _COUNT.findall(stream.read())
    if not found:
        raise RuntimeError(f"no instruction count in {log}")
    return int(found[-1].replace(",", ""))


def callgrind(output: str) -> list[str]:
    """The command line that runs a command under callgrind, its dumps
    written to ``output.PID.N``."""
    return ["valgrind", "--tool=callgrind",
            f"--callgrind-out-file={output}.%p"]


def _dumped_total(output: str, pid: int, before: set[str]) -> int:
    """The instructions counted in the dump that ``callgrind_control -d``
    asked of process ``pid`` (a file not in ``before``): its
    ``summary``, the events since the counters were zeroed (its
    ``totals`` may also hold the costs, from before, of calls that were
    under way then)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for path in set(glob.glob(f"{output}.{pid}.*")) - before:
            with open(path) as stream:
                for line in stream:
                    if line.startswith("summary:"):
                        return int(line.split()[1])
        time.sleep(0.2)
    raise RuntimeError(f"callgrind wrote no dump of process {pid}")


def count_served(pid: int, output: str, client: floor.Client,
                 made: list[str], args: argparse.Namespace
                 ) -> dict[str, float]:
    """Instructions per create and per poll of the process ``pid`` that
    runs under :func:`callgrind`, warmed up, as ``client`` sends them."""
    sends: dict[str, tuple[int, Callable[[int], object]]] = {
        "create": (args.creates[1], lambda _index: client.create()),
        "get": (args.gets, lambda index: client.get(made[index % len(made)])),
    }
    counts = {}
    for request, (count, send) in sends.items():
        subprocess.run(["callgrind_control", "-z", str(pid)], check=True,
                       capture_output=True)
        for index in range(count):
            send(index)
        time.sleep(floor.SETTLE)
        before = set(glob.glob(f"{output}.{pid}.*"))
        subprocess.run(["callgrind_control", "-d", str(pid)], check=True,
                       capture_output=True)
        counts[request] = _dumped_total(output, pid, before) / count
    return counts


def measure_served(dbs: tuple[str, str, str], args: argparse.Namespace,
                   workdir: str) -> dict[str, dict[str, float]]:
    """The server, the HTTP floor and the served floor, one after the
    other, each under callgrind: instructions per request."""
    server_db, _, served_db = dbs
    counts: dict[str, dict[str, float]] = {}
    output = f"{workdir}/callgrind.server"
    target = reference.start(server_db, extra=QUIET,
                             wrapper=callgrind(output))
    try:
        client = floor.Client(target.endpoint, expect_active=True)
        made = floor.warm_up(client, args)
        counts["server"] = count_served(target.pid, output, client, made,
                                        args)
    finally:
        target.stop()
    for part, sql in (("http", None), ("served", served_db)):
        output = f"{workdir}/callgrind.{part}"
        with floor.hello_world(server_db, client.sizes, args, sql,
                               callgrind(output), QUIET) as (pid, hello):
            counts[part] = count_served(pid, output, hello, made, args)
    return counts


@contextlib.contextmanager
def copies(kind: str, source: str, count: int, prefix: str
           ) -> Iterator[list[str]]:
    """``count`` copies of the database at URL ``source`` (on SQLite, the
    files ``prefix-N.sqlite``)."""
    if kind == "sqlite":
        path = source.split(":///", 1)[1]
        made = []
        for index in range(count):
            copy = f"{prefix}-{index}.sqlite"
            for suffix in ("", "-wal"):  # the log, if not checkpointed
                with contextlib.suppress(FileNotFoundError):
                    shutil.copyfile(path + suffix, copy + suffix)
            made.append(f"sqlite:///{copy}")
        yield made
        return
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(
            reference.postgresql_database(template=source))
            for _ in range(count)]


def measure_loops(dbs: tuple[str, str, str], kind: str,
                  args: argparse.Namespace, workdir: str
                  ) -> dict[str, dict[str, float]]:
    """The application and the SQL floor in a loop, three runs each (on
    copies of the server's and the SQL floor's databases), under
    cachegrind: instructions per request."""
    small, large = args.creates
    runs = [(part, creates, gets) for part in PARTS
            for creates, gets in ((small, 0), (large, 0), (small, args.gets))]
    with copies(kind, dbs[0], 3, f"{workdir}/app") as app_dbs, \
            copies(kind, dbs[1], 3, f"{workdir}/sql") as sql_dbs:
        databases = {"app": iter(app_dbs), "sql": iter(sql_dbs)}
        with concurrent.futures.ThreadPoolExecutor(args.parallel) as pool:
            futures = [pool.submit(
                counted, part, next(databases[part]), creates, gets,
                f"{workdir}/run-{index}.log")
                for index, (part, creates, gets) in enumerate(runs)]
            by_run = dict(zip(runs, [future.result() for future in futures],
                              strict=True))
    counts = {part: {"create": (by_run[part, large, 0]
                                - by_run[part, small, 0]) / (large - small),
                     "get": (by_run[part, small, args.gets]
                             - by_run[part, small, 0]) / args.gets}
              for part in PARTS}
    if any(count <= 0 for by_request in counts.values()
           for count in by_request.values()):
        # Two runs of the same requests differ by a few million
        # instructions: the difference of too few requests is lost in it.
        raise SystemExit(f"{kind}: a difference of two runs is not above "
                         f"their noise ({counts}): give more --creates "
                         f"or --gets")
    return counts


def measure_database(kind: str, args: argparse.Namespace) -> dict[str, Any]:
    """Every part on one kind of database, counted."""
    workdir = tempfile.mkdtemp(prefix="baremetal-alloc-instructions-")
    try:
        with floor.databases(kind, workdir, args.creates[1]
                             + 2 * floor.WARMUP) as dbs:
            floor.log(f"{kind}: the application and the SQL floor in a "
                      f"loop, under cachegrind")
            # (First: PostgreSQL copies its templates while nobody is
            # connected to them.)
            counts = measure_loops(dbs, kind, args, workdir)
            if not args.loops_only:
                floor.log(f"{kind}: the server, the HTTP floor and the "
                          f"served floor, under callgrind")
                counts.update(measure_served(dbs, args, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    loop_ratio = {request: counts["app"][request] / counts["sql"][request]
                  for request in REQUESTS}
    if args.loops_only:
        return {"instructions": counts, "ratio_loop": loop_ratio}
    return {"instructions": counts,
            "ratio": {request: counts["server"][request]
                      / (counts["http"][request] + counts["sql"][request])
                      for request in REQUESTS},
            "ratio_served": {request: counts["server"][request]
                             / counts["served"][request]
                             for request in REQUESTS},
            "ratio_loop": loop_ratio}


def table(results: dict[str, dict[str, Any]]) -> list[str]:
    """One row per database and request: thousands of instructions."""
    lines = [f"{'database':10}  {'request':8}  {'server':>8}  "
             f"{'HTTP floor':>10}  {'SQL floor':>9}  {'ratio':>6}  "
             f"{'served floor':>12}  {'ratio':>6}  {'app in a loop':>13}  "
             f"{'ratio':>6}   (thousands of instructions per request)"]
    for kind, result in results.items():
        counts = result["instructions"]
        for request in REQUESTS:
            if "server" not in counts:  # --loops-only
                lines.append(
                    f"{kind:10}  {request:8}  {'':>8}  {'':>10}  "
                    f"{counts['sql'][request] / 1e3:>9,.0f}  {'':>6}  "
                    f"{'':>12}  {'':>6}  "
                    f"{counts['app'][request] / 1e3:>13,.0f}  "
                    f"{result['ratio_loop'][request]:>5.2f}x")
                continue
            lines.append(
                f"{kind:10}  {request:8}  "
                f"{counts['server'][request] / 1e3:>8,.0f}  "
                f"{counts['http'][request] / 1e3:>10,.0f}  "
                f"{counts['sql'][request] / 1e3:>9,.0f}  "
                f"{result['ratio'][request]:>5.2f}x  "
                f"{counts['served'][request] / 1e3:>12,.0f}  "
                f"{result['ratio_served'][request]:>5.2f}x  "
                f"{counts['app'][request] / 1e3:>13,.0f}  "
                f"{result['ratio_loop'][request]:>5.2f}x")
    return lines


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    floor.add_database_option(parser)
    parser.add_argument("--creates", type=int, nargs=2, default=[100, 300],
                        metavar=("N1", "N2"),
                        help="creates of the shorter and the longer run")
    parser.add_argument("--gets", type=int, default=2000)
    parser.add_argument("--parallel", type=int, default=os.cpu_count() or 1,
                        help="runs at once (the counts do not depend on it)")
    parser.add_argument("--loops-only", action="store_true",
                        help="count only the application and the SQL floor "
                             "in a loop (a minute a database): enough to "
                             "compare two versions of the application")
    rawruns.add_option(parser, "instructions")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    parser.set_defaults(list_size=1000)  # the warm-up's list (floor.warm_up)
    args = parser.parse_args(argv)
    if not args.child and not 0 < args.creates[0] < args.creates[1]:
        parser.error("--creates N1 N2: 0 < N1 < N2")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        part, db, creates, gets = args.child
        child(part, db, int(creates), int(gets))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not on PATH", file=sys.stderr)
        return 2
    started = datetime.datetime.now(datetime.timezone.utc)
    load_start = os.getloadavg()
    results = {kind: measure_database(kind, args) for kind in args.db}
    for line in table(results):
        print(line)
    floor.finish(args, started, load_start, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
