"""Where the server's CPU goes during creates and during polls.

``python -m benchmarks.floor_profile``: on a fresh SQLite fleet, the server
runs under :mod:`benchmarks.profiled_serve` (every thread under cProfile,
timed by its thread's CPU clock) twice: once serving only ``Prefer: wait``
creates, once only ``GET`` of one allocation; with ``--lists N``, a
third time serving only lists of every allocation made.  For each, the CPU is
summed by where the code lives (SQLAlchemy, waitress, the server's own
packages, the driver...; self time, a built-in's charged to its callers)
and the functions with the most
self and cumulative time are listed.  The run's JSON goes to a new file
in ``benchmarks/results/`` (not committed; ``--output``, see
:mod:`benchmarks.rawruns`).
"""

from __future__ import annotations

import argparse
import os
import pstats
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from baremetal_allocclient.tests.functional import targets
from benchmarks import floor, profiled_serve, rawruns, reference

TOP = 25
#: (text in the file name or built-in's name, group), first match wins.
GROUPS = (
    ("/sqlalchemy/", "SQLAlchemy"),
    ("sqlite3", "sqlite3 driver"),
    ("psycopg", "psycopg driver"),
    ("/waitress/", "waitress"),
    ("baremetal_allocclient/server/frontend/", "server: frontend/"),
    ("baremetal_allocclient/server/api/", "server: api/"),
    ("baremetal_allocclient/server/db/", "server: db/"),
    ("baremetal_allocclient/server/allocation/", "server: allocation/"),
    ("baremetal_allocclient/server/ironic/", "server: ironic/"),
    ("baremetal_allocclient/server/", "server: other modules"),
    ("/werkzeug/", "werkzeug"),
    ("/jsonschema", "jsonschema"),
    ("/referencing/", "jsonschema"),
    ("/rpds", "jsonschema"),
    ("/json/", "json"),
    ("/logging/", "logging"),
    ("threading.py", "threading"),
    ("/email/", "email (header parsing)"),
    ("/http/", "http"),
    ("/uuid.py", "uuid"),
    ("/datetime.py", "datetime"),
)


def group_of(filename: str, name: str) -> str:
    """Where a profiled function lives, for the summary by group."""
    text = f"{filename}:{name}"
    for needle, group in GROUPS:
        if needle in text:
            return group
    if filename == "~":
        return "built-ins"
    return "other Python: " + os.path.basename(filename)


def _label(func: tuple[str, int, str]) -> str:
    filename, line, name = func
    if filename == "~":
        return name
    parts = filename.split(os.sep)
    return f"{'/'.join(parts[-3:])}:{line}({name})"


def _stats(path: str) -> dict[Any, Any]:
    """The profile at ``path`` less the one at ``path`` + ``.warm`` (the
    warm-up); the callers are those of the whole run."""
    stats: Any = pstats.Stats(path).stats  # type: ignore[attr-defined]
    warm: Any = {}
    if os.path.exists(path + profiled_serve.WARM_SUFFIX):
        warm = pstats.Stats(  # type: ignore[attr-defined]
            path + profiled_serve.WARM_SUFFIX).stats
    result: dict[Any, Any] = {}
    for func, (cc, nc, tt, ct, callers) in stats.items():
        wcc, wnc, wtt, wct, _ = warm.get(func, (0, 0, 0.0, 0.0, {}))
        if nc > wnc or tt > wtt:
            result[func] = (cc - wcc, nc - wnc, tt - wtt, ct - wct, callers)
    return result


def _groups(stats: dict[Any, Any]) -> dict[str, float]:
    """Self time by group; a built-in's (other than the drivers') is
    charged to its callers' groups, in proportion to the time it spent
    for each, so that ``dict.get`` called by SQLAlchemy counts there."""
    groups: dict[str, float] = {}
    for (filename, _line, name), (_cc, _nc, tottime, _ct, callers) \
            in stats.items():
        shares: dict[str, float] = {}
        if group_of(filename, name) == "built-ins" and callers:
            spent = sum(row[2] for row in callers.values()) or 1.0
            for (caller_file, _l, caller), row in callers.items():
                group = group_of(caller_file, caller)
                shares[group] = shares.get(group, 0.0) + row[2] / spent
        for group, share in (shares or {group_of(filename, name): 1.0}
                             ).items():
            groups[group] = groups.get(group, 0.0) + tottime * share
    return groups


def summarise(path: str, requests: int) -> dict[str, Any]:
    """Self CPU by group, and the top functions, in ms per request."""
    stats = _stats(path)
    per = 1000.0 / requests
    groups = _groups(stats)
    total = sum(groups.values())

    def top(index: int) -> list[list[Any]]:
        ranked = sorted(stats.items(), key=lambda item: -item[1][index])
        return [[_label(func), row[1], round(row[2] * per, 4),
                 round(row[3] * per, 4)] for func, row in ranked[:TOP]]

    return {
        "requests": requests,
        "cpu_ms_per_request_profiled": round(total * per, 3),
        "by_group_ms": {g: round(t * per, 4) for g, t in sorted(
            groups.items(), key=lambda item: -item[1])},
        # [function, calls, self ms, cumulative ms] per request
        "top_self": top(2),
        "top_cumulative": top(3),
    }


def warmed_up(pid: int, out: str) -> None:
    """Have the profiled server ``pid`` write its profile so far."""
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + 30
    while not os.path.exists(out + profiled_serve.WARM_SUFFIX):
        if time.monotonic() > deadline:
            raise RuntimeError("the profiled server wrote no warm profile")
        time.sleep(0.05)
    time.sleep(0.2)  # let it finish writing


def profiled(db: str, workdir: str, phase: str,
             drive: Callable[[floor.Client, Callable[[], None]], int],
             keep: str | None = None) -> dict[str, Any]:
    """Run the profiled server on ``db`` while ``drive`` sends requests
    (it returns how many were measured, and calls its second argument
    after its warm-up); the summary of the profile, whose files are
    copied into the directory ``keep`` if given."""
    out = os.path.join(workdir, f"{phase}.pstats")
    os.environ[profiled_serve.OUT_ENV] = out
    script = os.path.join(floor.HERE, "profiled_serve.py")

    def command(port: int) -> list[str]:
        return [sys.executable, script, "--log-level", "WARNING", "serve",
                "--host", "127.0.0.1", "--port", str(port), "--db", db,
                "--conductor-name", "bench"]

    target = targets.serve_process(
        phase, tempfile.mkdtemp(prefix="bench-profile-"), command,
        lambda: "")
    try:
        count = drive(floor.Client(target.endpoint, expect_active=True),
                      lambda: warmed_up(target.pid, out))
    finally:
        target.stop()
    if keep:
        os.makedirs(keep, exist_ok=True)
        for suffix in ("", profiled_serve.WARM_SUFFIX):
            shutil.copyfile(out + suffix,
                            os.path.join(keep, f"{phase}.pstats{suffix}"))
    return summarise(out, count)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Profiles of creates, of polls and (``--lists``) of lists on
    SQLite, printed and returned."""
    workdir = tempfile.mkdtemp(prefix="baremetal-alloc-profile-")
    db = f"sqlite:///{workdir}/profile.sqlite"
    creates, gets = int(args.allocations), int(args.gets)
    lists = int(args.lists)
    uuids: list[str] = []
    try:
        reference.server("db", "upgrade", "--db", db)
        reference.enroll(db, creates + floor.WARMUP, floor.RC, workdir)

        def create(client: floor.Client, warm: Callable[[], None]) -> int:
            uuids.extend(client.create() for _ in range(floor.WARMUP))
            warm()
            uuids.extend(client.create() for _ in range(creates))
            return creates

        def poll(client: floor.Client, warm: Callable[[], None]) -> int:
            for index in range(floor.WARMUP):
                client.get(uuids[index])
            warm()
            for index in range(gets):
                client.get(uuids[index % len(uuids)])
            return gets

        def listing(client: floor.Client, warm: Callable[[], None]) -> int:
            for _ in range(2):
                client.list(len(uuids))
            warm()
            for _ in range(lists):
                client.list(len(uuids))
            return lists

        result = {"create": profiled(db, workdir, "create", create,
                                     args.pstats_dir),
                  "poll": profiled(db, workdir, "poll", poll,
                                   args.pstats_dir)}
        if lists:
            result["list"] = profiled(db, workdir, "list", listing,
                                      args.pstats_dir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    for phase, summary in result.items():
        print_summary(phase, summary)
    return result


def print_summary(phase: str, summary: dict[str, Any]) -> None:
    print(f"\nprofile of {phase} ({summary['requests']} requests, "
          f"{summary['cpu_ms_per_request_profiled']} ms CPU per request "
          "under cProfile); self CPU ms per request by group:")
    for group, ms in summary["by_group_ms"].items():
        if ms >= 0.01:
            print(f"  {ms:8.3f}  {group}")
    for key, title in (("top_self", "self"), ("top_cumulative",
                                              "cumulative")):
        print(f"top functions by {title} CPU (calls, self ms, cum ms "
              "per request):")
        for label, calls, self_ms, cum_ms in summary[key]:
            print(f"  {calls / summary['requests']:7.1f} {self_ms:8.4f} "
                  f"{cum_ms:8.4f}  {label}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--allocations", type=int, default=300)
    parser.add_argument("--gets", type=int, default=1000)
    parser.add_argument("--lists", type=int, default=0,
                        help="also profile this many lists of every "
                        "allocation made (with the warm-up's)")
    rawruns.add_option(parser, "floor-profile")
    parser.add_argument("--pstats-dir", help="keep the profiles (pstats "
                        "files, the .warm ones to subtract) there")
    args = parser.parse_args(argv)
    load_start = os.getloadavg()
    result = run(args)
    result["load_average"] = [list(load_start), list(os.getloadavg())]
    rawruns.write_json(args.output, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
