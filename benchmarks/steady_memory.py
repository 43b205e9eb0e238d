"""Server memory under a long mixed load (issue 52): the RSS of one
``serve`` process sampled along ``--requests`` requests.

A benchmark, not a test.  One ``serve`` process with its defaults on a
fresh SQLite fleet of ``--nodes`` nodes; ``--threads`` client threads,
each with a kept-alive ``requests`` session, repeat one cycle of
eleven requests until the total is reached:

    a create (``POST /v1/allocations``, ``Prefer: wait=10``), three
    polls of it, a read of its node, a list of allocations and one of
    nodes (``limit=100``), an error (in turn: an unknown allocation,
    404; a body that is not JSON, 400; an unknown query parameter,
    400), a create that fails (a resource class no node has: 201, then
    ``error``), the delete of that one and of the first (204).

The server's RSS (``psutil``) is sampled every half second with the
number of requests answered so far.  Printed: the RSS at 1 %, 10 %,
20 % ... 100 % of the requests, the rise from the 10 % sample (the end
of the warm-up: caches, heaps and the database's pages filled) to the
highest later sample, the statuses that were not the expected one, the
requests per second and the server's CPU.  The run passes when that
rise is at most ``--bound`` MiB.

Usage (from the repository root)::

    .venv/bin/python -m benchmarks.steady_memory --requests 100000
    .venv/bin/python -m benchmarks.steady_memory --requests 1000000

The raw run (every sample) goes to
``benchmarks/results/steady-memory-<time>.json`` (not committed;
``--output``, see :mod:`benchmarks.rawruns`).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import itertools
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psutil
import requests

from benchmarks import load, rawruns, reference

RC = "bench"
MISSING_RC = "no-such-class"

#: (kind, method, path, body, expected status); "{alloc}" and "{node}"
#: are the cycle's allocation and its node.
Step = tuple[str, str, str, Any, int]
_ERRORS: tuple[Step, ...] = (
    ("error", "GET", "/v1/allocations/{missing}", None, 404),
    ("error", "POST", "/v1/allocations", b"{not json", 400),
    ("error", "GET", "/v1/nodes?no_such_filter=1", None, 400),
)


def cycle(turn: int) -> Iterator[Step]:
    """The requests of one cycle (``turn`` picks the error)."""
    yield ("create", "POST", "/v1/allocations", {"resource_class": RC}, 201)
    for _ in range(3):
        yield ("poll", "GET", "/v1/allocations/{alloc}", None, 200)
    yield ("node", "GET", "/v1/nodes/{node}", None, 200)
    yield ("list", "GET", "/v1/allocations?limit=100", None, 200)
    yield ("list", "GET", "/v1/nodes?limit=100", None, 200)
    yield _ERRORS[turn % len(_ERRORS)]
    yield ("failed create", "POST", "/v1/allocations",
           {"resource_class": MISSING_RC}, 201)
    yield ("delete", "DELETE", "/v1/allocations/{failed}", None, 204)
    yield ("delete", "DELETE", "/v1/allocations/{alloc}", None, 204)


class Load:
    """``threads`` clients sending cycles until ``total`` requests."""

    def __init__(self, endpoint: str, total: int, threads: int) -> None:
        self.endpoint, self.total, self.threads = endpoint, total, threads
        self.sent = itertools.count()  # next() is atomic in CPython
        self.done = 0
        self.lock = threading.Lock()
        self.unexpected: collections.Counter[str] = collections.Counter()
        self.finished = threading.Event()

    def _request(self, session: requests.Session, step: Step,
                 names: dict[str, str]) -> Any:
        kind, method, path, body, expected = step
        kwargs: dict[str, Any] = {"timeout": 60}
        if isinstance(body, bytes):
            kwargs["data"] = body
            kwargs["headers"] = {"Content-Type": "application/json"}
        elif body is not None:
            kwargs["json"] = body
            kwargs["headers"] = {"Prefer": "wait=10"}
        try:
            response = session.request(
                method, self.endpoint + path.format(**names), **kwargs)
            status: int | str = response.status_code
        except requests.RequestException as exc:
            status, response = type(exc).__name__, None
        with self.lock:
            self.done += 1
            if status != expected:
                self.unexpected[f"{kind} {method}: {status}"] += 1
        if response is None or status != expected or not kind.endswith(
                "create"):
            return None
        return response.json()

    def _client(self) -> None:
        session = requests.Session()
        session.headers.update(load.HEADERS)
        missing = str(uuid.uuid4())
        names = dict.fromkeys(("missing", "alloc", "node", "failed"),
                              missing)
        for turn in itertools.count():
            for step in cycle(turn):
                if next(self.sent) >= self.total:
                    return
                made = self._request(session, step, names)
                if made is None:
                    continue
                if step[0] == "create":
                    names["alloc"] = made["uuid"]
                    names["node"] = made.get("node_uuid") or names["missing"]
                else:
                    names["failed"] = made["uuid"]

    def run(self) -> None:
        threads = [threading.Thread(target=self._client, daemon=True)
                   for _ in range(self.threads)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.finished.set()


def sample(process: psutil.Process, progress: Callable[[], int],
           finished: threading.Event, every: float
           ) -> list[tuple[float, int, int]]:
    """(seconds, requests answered, RSS bytes) every ``every`` s until
    ``finished``, and once after."""
    began, samples = time.monotonic(), []
    while True:
        over = finished.wait(every)
        samples.append((round(time.monotonic() - began, 1), progress(),
                        process.memory_info().rss))
        if over:
            return samples


def at_fraction(samples: list[tuple[float, int, int]], total: int,
                fraction: float) -> tuple[float, int, int]:
    """The first sample at or past ``fraction`` of the requests."""
    return next((s for s in samples if s[1] >= fraction * total),
                samples[-1])


def summarize(samples: list[tuple[float, int, int]], total: int,
              bound_mib: float) -> dict[str, Any]:
    """The RSS along the run, and whether it stayed flat."""
    mib = 1 << 20
    warm = at_fraction(samples, total, 0.10)
    later = [s for s in samples if s[1] >= warm[1]]
    rise = (max(s[2] for s in later) - warm[2]) / mib
    marks = [0.01] + [tenth / 10 for tenth in range(1, 11)]
    return {
        "rss_mib_at": {f"{round(f * 100)}%": round(
            at_fraction(samples, total, f)[2] / mib, 1) for f in marks},
        "warm_mib": round(warm[2] / mib, 1),
        "highest_after_warm_mib": round(max(s[2] for s in later) / mib, 1),
        "lowest_after_warm_mib": round(min(s[2] for s in later) / mib, 1),
        "rise_after_warm_mib": round(rise, 1),
        "bound_mib": bound_mib,
        "flat": rise <= bound_mib,
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    workdir = tempfile.mkdtemp(prefix="baremetal-alloc-memory-")
    db = "sqlite:///" + os.path.join(workdir, "bench.sqlite")
    try:
        reference.server("db", "upgrade", "--db", db)
        reference.enroll(db, args.nodes, RC, workdir)
        target = reference.start(db)
        try:
            process = psutil.Process(target.pid)
            work = Load(target.endpoint, args.requests, args.threads)
            thread = threading.Thread(target=work.run, daemon=True)
            cpu = process.cpu_times()
            began = time.monotonic()
            thread.start()
            samples = sample(process, lambda: work.done, work.finished,
                             args.every)
            wall = time.monotonic() - began
            used = process.cpu_times()
            if work.done < args.requests:
                raise RuntimeError(f"only {work.done} requests were made")
            out = summarize(samples, args.requests, args.bound)
            out.update(
                requests=work.done, seconds=round(wall, 1),
                requests_per_s=round(work.done / wall, 1),
                server_cpu_ms_per_request=round(
                    (used.user + used.system - cpu.user - cpu.system)
                    / work.done * 1000, 3),
                unexpected=dict(work.unexpected), samples=samples)
            return out
        finally:
            target.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def summary_lines(out: dict[str, Any]) -> list[str]:
    marks = "  ".join(f"{k} {v}" for k, v in out["rss_mib_at"].items())
    unexpected = ", ".join(f"{k} x{v}" for k, v in
                           sorted(out["unexpected"].items())) or "none"
    return [
        f"{out['requests']} requests in {out['seconds']} s "
        f"({out['requests_per_s']}/s, server CPU "
        f"{out['server_cpu_ms_per_request']} ms each)",
        f"server RSS (MiB) after  {marks}",
        f"after the warm-up (10 %): {out['lowest_after_warm_mib']}-"
        f"{out['highest_after_warm_mib']} MiB, rise "
        f"{out['rise_after_warm_mib']} MiB (bound {out['bound_mib']:g}): "
        f"{'flat' if out['flat'] else 'NOT FLAT'}",
        f"unexpected statuses: {unexpected}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--every", type=float, default=0.5)
    parser.add_argument("--bound", type=float, default=16.0,
                        help="MiB the RSS may rise after the warm-up")
    rawruns.add_option(parser, "steady-memory")
    args = parser.parse_args()
    started = datetime.datetime.now(datetime.timezone.utc)
    out = measure(args)
    lines = summary_lines(out)
    print("\n".join(lines))
    rawruns.write_json(args.output, {
        "started": started.isoformat(timespec="seconds"),
        "arguments": vars(args), "load_average": os.getloadavg(),
        "summary": lines, **out})
    return 0 if out["flat"] else 1


if __name__ == "__main__":
    sys.exit(main())
