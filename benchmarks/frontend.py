"""HTTP front-end benchmark: cheroot (before issue 20) beside waitress.

A benchmark, not a test.  In one run, for each front end in turn (the
same server command, application and a fresh SQLite fleet; cheroot
through :mod:`benchmarks.cheroot_serve`; ``stock``, with
``--front-ends``, is ``serve`` on stock waitress, the fallback for a
waitress without the internals the deadlines use):

* ``GET /`` latency (p50/p99, a new connection per request, sequential)
  with no other client, then with ``--slow`` slow connections open, each
  sending one header line every ``DRIP`` seconds and never finishing;
* allocations/s (``--nodes`` allocations on as many nodes, 8 client
  threads, ``Prefer: wait``; :mod:`benchmarks.load`) in both conditions,
  the median of ``--batches`` batches (one when a batch made nothing).

``--rounds`` rounds alternate the order of the two front ends (the
machine's speed drifts); the table shows medians over the rounds and the
ratio of each figure to the first front end's (waitress / cheroot).

A request that gets no answer within ``--timeout`` counts as a failure
and at that timeout in the percentiles.  The new front end runs with
``--request-timeout 600`` so that the slow connections stay open for the
whole measurement (with the default, 30 s, each is cut off then).

Usage (from the repository root)::

    .venv/bin/pip install -r benchmarks/requirements.txt
    .venv/bin/python -m benchmarks.frontend            # ~10 minutes

The run's JSON goes to a new file in ``benchmarks/results/`` (not
committed; ``--output``, see :mod:`benchmarks.rawruns`).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import resource
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from baremetal_allocclient.server.frontend.server import STOCK_ENV
from baremetal_allocclient.tests.functional import targets
from benchmarks import load, rawruns, reference

HERE = os.path.dirname(os.path.abspath(__file__))
RC = "bench"
DRIP = 2.0  # seconds between two header lines of a slow connection
SETTLE = 3.0  # seconds the slow connections are open before measuring


FRONT_ENDS = ("cheroot", "waitress", "stock")


def _command(front_end: str, db: str) -> Callable[[int], list[str]]:
    launcher = {
        "cheroot": [sys.executable, os.path.join(HERE, "cheroot_serve.py")],
        "waitress": [reference.SERVER],
        "stock": ["env", f"{STOCK_ENV}=1", reference.SERVER],
    }[front_end]

    def command(port: int) -> list[str]:
        return [*launcher, "--log-level", "WARNING", "serve",
                "--host", "127.0.0.1", "--port", str(port), "--db", db,
                "--request-timeout", "600"]

    return command


@contextlib.contextmanager
def slow_connections(port: int, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections that send a header line every ``DRIP`` s."""
    socks: list[socket.socket] = []
    stop = threading.Event()

    def drip() -> None:
        line = 0
        while not stop.wait(DRIP):
            line += 1
            for sock in socks:
                with contextlib.suppress(OSError):
                    sock.send(b"X-Slow-%d: y\r\n" % line)

    try:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
            socks.append(sock)
        thread = threading.Thread(target=drip, daemon=True)
        thread.start()
        time.sleep(SETTLE)
        yield socks
    finally:
        stop.set()
        for sock in socks:
            sock.close()


def allocations(endpoint: str, nodes: int, timeout: float,
                batches: int) -> dict[str, Any]:
    """Batches of ``nodes`` allocations on ``nodes`` nodes, each freed."""
    client = load.Client([endpoint], timeout=timeout, prefer_wait=10)
    rates, states = [], {}
    for _ in range(batches):
        result = client.run(nodes, 8, RC, settle_timeout=60)
        summary = result.summary()
        client.cleanup(result)
        rates.append(summary["allocations_per_s"])
        states = summary["states"]
        if not states.get("active"):
            break  # every request failed: another batch says nothing new
    return {"allocations_per_s": statistics.median(rates),
            "batches": rates, "states": states}


def measure(front_end: str, args: argparse.Namespace) -> dict[str, Any]:
    """Every figure for one front end, on its own fresh fleet."""
    workdir = tempfile.mkdtemp(prefix="baremetal-alloc-frontend-")
    db = "sqlite:///" + os.path.join(workdir, "bench.sqlite")
    try:
        reference.server("db", "upgrade", "--db", db)
        reference.enroll(db, args.nodes, RC, workdir)
        target = targets.serve_process(
            front_end, tempfile.mkdtemp(prefix="bench-fe-"),
            _command(front_end, db), lambda: "")
        try:
            port = int(target.endpoint.rsplit(":", 1)[1])
            out: dict[str, Any] = {"idle": {}, "slow": {}}
            for state in ("idle", "slow"):
                with (slow_connections(port, args.slow) if state == "slow"
                      else contextlib.nullcontext([])):
                    out[state]["get"] = load.timed_gets(
                        target.endpoint + "/", args.timeout, 60,
                        count=args.gets)
                    out[state]["allocate"] = allocations(
                        target.endpoint, args.nodes, args.timeout,
                        args.batches)
                out[state]["load_average"] = os.getloadavg()[0]
            return out
        finally:
            target.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


FIGURES = (("get", "p50_ms"), ("get", "p99_ms"), ("get", "failures"),
           ("get", "requests"), ("allocate", "allocations_per_s"))


def medians(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each figure over the rounds of one front end/state."""
    return {f"{part}.{key}": round(
                statistics.median(r[part][key] for r in rounds), 2)
            for part, key in FIGURES}


def _row(name: str, state: str, m: dict[str, Any]) -> str:
    return (f"{name:9} {state:5} GET / p50 {m['get.p50_ms']:>8} ms  p99 "
            f"{m['get.p99_ms']:>8} ms  failed {m['get.failures']:>5g}/"
            f"{m['get.requests']:<5g} allocations/s "
            f"{m['allocate.allocations_per_s']:>7}")


def _ratios(new: dict[str, Any], old: dict[str, Any], label: str) -> str:
    def ratio(key: str) -> str:
        return f"{new[key] / old[key]:.2f}" if old[key] else "-"

    return (f"{'ratio':9} {'':5} GET / p50 {ratio('get.p50_ms'):>8}     p99 "
            f"{ratio('get.p99_ms'):>8}    {'':13} allocations/s "
            f"{ratio('allocate.allocations_per_s'):>7}  ({label})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--slow", type=int, default=1000)
    parser.add_argument("--gets", type=int, default=300)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--front-ends", nargs="+", choices=FRONT_ENDS,
                        default=["cheroot", "waitress"],
                        help="the first is the base of the ratios")
    rawruns.add_option(parser, "frontend")
    args = parser.parse_args()
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    started = datetime.datetime.now(datetime.timezone.utc)
    names = list(args.front_ends)
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for index in range(args.rounds):
        for name in (names if index % 2 == 0 else names[::-1]):
            rounds[name].append(measure(name, args))
    summary = {name: {state: medians([r[state] for r in rounds[name]])
                      for state in ("idle", "slow")} for name in names}
    for state in ("idle", "slow"):
        for name in names:
            print(_row(name, state, summary[name][state]))
        for name in names[1:]:
            print(_ratios(summary[name][state], summary[names[0]][state],
                          f"{name}/{names[0]}"))
    rawruns.write_json(args.output, {
        "started": started.isoformat(timespec="seconds"),
        "arguments": {k: v for k, v in vars(args).items() if k != "output"},
        "medians": summary, "rounds": rounds})
    return 0


if __name__ == "__main__":
    sys.exit(main())
