"""Blank-line attack benchmark (issue 52): an ordinary client's latency
beside 1,000 connections that send only blank lines.

A benchmark, not a test.  One ``serve`` process with the DEFAULT limits
(``--request-timeout 30``, ``--idle-timeout 60``, ``--connection-limit
4096``: the attack does not reach the limit; it costs the I/O loop) on a
fresh SQLite fleet of 100 nodes.  In one run:

* quiet: sequential ``GET /v1`` (a new connection each, ``--timeout``
  s client timeout, a timeout counts as a failure and at that timeout in
  the percentiles) for ``--seconds``;
* attack: ``--connections`` connections each send ``\\r\\n`` every
  ``--every`` s and nothing else; one the server closes is opened again
  at once, so the attacker (a process of its own) keeps its count.  The
  same ``GET /v1`` for ``--seconds`` (by default three request
  timeouts: each connection is cut off and replaced at least twice).

Printed: p50/p99/max and failures of each phase and the ratios attack /
quiet, the server's CPU seconds per phase, and how long the server let
the attacker's connections live (from connect to close, closes seen in
the attack phase).  Before issue 52's fix every such connection lived
for good.

Usage (from the repository root)::

    .venv/bin/python -m benchmarks.blank_lines        # ~4 minutes

The raw run goes to ``benchmarks/results/blank-lines-<time>.json`` (not
committed; ``--output``, see :mod:`benchmarks.rawruns`).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import multiprocessing
import os
import resource
import selectors
import shutil
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import psutil

from benchmarks import load, rawruns, reference

RC = "bench"


class BlankLines:
    """``count`` connections to ``port`` that send ``\r\n`` every
    ``every`` s; each the server closes is opened again (one thread)."""

    def __init__(self, port: int, count: int, every: float) -> None:
        self.port, self.count, self.every = port, count, every
        self.selector = selectors.DefaultSelector()
        self.opened: dict[socket.socket, float] = {}
        self.lifetimes: list[float] = []  # connect to close by the server
        self.timeouts = 0  # closes that came with a 408

    def _open(self) -> None:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        sock.setblocking(False)
        self.opened[sock] = time.monotonic()
        self.selector.register(sock, selectors.EVENT_READ)

    def _closed(self, sock: socket.socket, answer: bytes) -> None:
        self.lifetimes.append(time.monotonic() - self.opened.pop(sock))
        self.timeouts += b" 408 " in answer
        self.selector.unregister(sock)
        sock.close()
        with contextlib.suppress(OSError):  # the listen backlog is full
            self._open()

    def _read(self, sock: socket.socket) -> None:
        answer = b""
        while True:
            try:
                chunk = sock.recv(4096)
            except BlockingIOError:
                return  # open still (a 408 without its close yet)
            except OSError:
                chunk = b""
            if not chunk:
                self._closed(sock, answer)
                return
            answer += chunk

    def run(self, stop: Any) -> dict[str, Any]:
        """Open them, then send and reopen until ``stop`` is set."""
        for _ in range(self.count):
            self._open()
        next_send = time.monotonic()
        while not stop.is_set():
            wait = max(0.0, min(next_send - time.monotonic(), 0.5))
            for key, _events in self.selector.select(wait):
                self._read(key.fileobj)  # type: ignore[arg-type]
            if time.monotonic() >= next_send:
                next_send += self.every
                for sock in list(self.opened):
                    with contextlib.suppress(OSError):  # closed by now
                        sock.send(b"\r\n")
        return {"lifetimes": self.lifetimes, "timeouts": self.timeouts,
                "open_at_end": len(self.opened)}


def _attack(port: int, count: int, every: float, ready: Any, stop: Any,
            results: Any) -> None:
    """The attacker, in a process of its own (so that it takes no GIL
    from the timed client)."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    attack = BlankLines(port, count, every)
    ready.set()
    results.put(attack.run(stop))


@contextlib.contextmanager
def attacking(port: int, count: int, every: float
              ) -> Iterator[dict[str, Any]]:
    """The attack running meanwhile; the dict gets its figures after."""
    context = multiprocessing.get_context("spawn")
    ready, stop, results = context.Event(), context.Event(), context.Queue()
    process = context.Process(target=_attack, daemon=True, args=(
        port, count, every, ready, stop, results))
    process.start()
    ready.wait(60)
    time.sleep(3)  # the connections opened, each has sent a blank line
    figures: dict[str, Any] = {}
    try:
        yield figures
    finally:
        stop.set()
        figures.update(results.get(timeout=120))
        process.join(30)


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Both phases on one server."""
    workdir = tempfile.mkdtemp(prefix="baremetal-alloc-blank-")
    db = "sqlite:///" + os.path.join(workdir, "bench.sqlite")
    try:
        reference.server("db", "upgrade", "--db", db)
        reference.enroll(db, 100, RC, workdir)
        target = reference.start(db)
        try:
            port = int(target.endpoint.rsplit(":", 1)[1])
            process = psutil.Process(target.pid)
            out: dict[str, Any] = {}
            cpu = _cpu(process)
            out["quiet"] = load.timed_gets(target.endpoint + "/v1",
                                           args.timeout, args.seconds)
            out["quiet"]["server_cpu_s"] = round(_cpu(process) - cpu, 2)
            with attacking(port, args.connections, args.every) as attack:
                cpu = _cpu(process)
                out["attack"] = load.timed_gets(
                    target.endpoint + "/v1", args.timeout, args.seconds)
                out["attack"]["server_cpu_s"] = round(_cpu(process) - cpu, 2)
            lifetimes = attack["lifetimes"]
            out["attack"]["open_at_end"] = attack["open_at_end"]
            out["attack"]["cut_off"] = len(lifetimes)
            out["attack"]["cut_off_with_408"] = attack["timeouts"]
            if lifetimes:
                out["attack"]["lifetime_s"] = {
                    "min": round(min(lifetimes), 2),
                    "median": round(statistics.median(lifetimes), 2),
                    "max": round(max(lifetimes), 2)}
            return out
        finally:
            target.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def summary(out: dict[str, Any], args: argparse.Namespace) -> list[str]:
    """The printed table."""
    lines = [f"{'phase':7} {'GETs':>6} {'failed':>6} {'p50 ms':>8} "
             f"{'p99 ms':>8} {'max ms':>8} {'server CPU s':>13}"]
    for phase in ("quiet", "attack"):
        row = out[phase]
        lines.append(f"{phase:7} {row['requests']:>6} {row['failures']:>6} "
                     f"{row['p50_ms']:>8} {row['p99_ms']:>8} "
                     f"{row['max_ms']:>8} {row['server_cpu_s']:>13}")
    quiet, attack = out["quiet"], out["attack"]
    lines.append(f"{'ratio':7} {'':>6} {'':>6} "
                 f"{attack['p50_ms'] / quiet['p50_ms']:>8.2f} "
                 f"{attack['p99_ms'] / quiet['p99_ms']:>8.2f}  "
                 "(attack / quiet)")
    life = attack.get("lifetime_s", {})
    lines.append(
        f"attack: {args.connections} connections, '\\r\\n' every "
        f"{args.every:g} s; {attack['cut_off']} cut off by the server "
        f"({attack['cut_off_with_408']} with a 408) after "
        f"{life.get('min')}-{life.get('max')} s (median "
        f"{life.get('median')} s), reopened; {attack['open_at_end']} open "
        "at the end")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--every", type=float, default=2.0)
    parser.add_argument("--seconds", type=float, default=90.0)
    parser.add_argument("--timeout", type=float, default=5.0)
    rawruns.add_option(parser, "blank-lines")
    args = parser.parse_args()
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    started = datetime.datetime.now(datetime.timezone.utc)
    out = measure(args)
    lines = summary(out, args)
    print("\n".join(lines))
    rawruns.write_json(args.output, {
        "started": started.isoformat(timespec="seconds"),
        "arguments": vars(args), "load_average": os.getloadavg(),
        "results": out, "summary": lines})
    return 0


if __name__ == "__main__":
    sys.exit(main())
