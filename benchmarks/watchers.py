"""One ``serve`` process holding many watchers of the change stream.

Starts a server (SQLite, ``--watchers`` allowed), measures its RSS,
threads and idle CPU (5 s) and a plain client's ``GET`` latency, then
opens ``--watchers`` raw watch connections (read by one thread of this
process), measures the same again, and ``--changes`` patches of one
allocation, each timed from its ``PATCH`` answer (the change committed)
to its line arriving at each watcher: p50 and p99 over every
(change, watcher) pair.

    .venv/bin/python -m benchmarks.watchers --watchers 1000
"""

from __future__ import annotations

import argparse
import os
import re
import selectors
import socket
import statistics
import threading
import time
import uuid
from typing import Any

import requests

from baremetal_allocclient.tests.fixtures.launcher import ServerProcess
from benchmarks import rawruns

V = {"X-OpenStack-Ironic-API-Version": "1.60"}
_MARK = re.compile(rb'"mark":"m(\d+)x"')


def _proc(pid: int) -> dict[str, float]:
    with open(f"/proc/{pid}/status", encoding="ascii") as stream:
        status = dict(line.split(":", 1) for line in stream if ":" in line)
    with open(f"/proc/{pid}/stat", encoding="ascii") as stream:
        fields = stream.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return {"rss_mib": int(status["VmRSS"].split()[0]) / 1024,
            "threads": int(status["Threads"]),
            "cpu_s": (int(fields[11]) + int(fields[12])) / ticks}


def _idle(pid: int, seconds: float = 5.0) -> dict[str, float]:
    before = _proc(pid)
    time.sleep(seconds)
    after = _proc(pid)
    return {"rss_mib": after["rss_mib"], "threads": after["threads"],
            "idle_cpu_percent": 100 * (after["cpu_s"] - before["cpu_s"])
            / seconds}


def _percentiles(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    if not values:
        return {"p50_ms": float("nan"), "p99_ms": float("nan")}
    return {"p50_ms": 1000 * statistics.median(values),
            "p99_ms": 1000 * values[min(len(values) - 1,
                                        int(len(values) * 0.99))]}


def _plain(endpoint: str, ident: str, count: int = 200) -> dict[str, float]:
    took = []
    with requests.Session() as session:
        for _ in range(count):
            began = time.monotonic()
            session.get(f"{endpoint}/v1/allocations/{ident}", headers=V,
                        timeout=30).raise_for_status()
            took.append(time.monotonic() - began)
    return _percentiles(took)


class Watchers(threading.Thread):
    """``count`` raw watch connections read by this one thread; the
    arrival time of each marked change on each."""

    def __init__(self, port: int, count: int, name: str) -> None:
        super().__init__(daemon=True)
        self.selector = selectors.DefaultSelector()
        self.hello = 0
        self.arrivals: dict[int, list[float]] = {}
        self.stopped = False
        request = (f"GET /v1/allocation_changes?name={name} HTTP/1.1\r\n"
                   "Host: 127.0.0.1\r\nX-Baremetal-Alloc-Extensions: watch"
                   "\r\nX-OpenStack-Ironic-API-Version: 1.60\r\n\r\n"
                   ).encode()
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(request)
            sock.setblocking(False)
            self.selector.register(sock, selectors.EVENT_READ, [b""])

    def run(self) -> None:
        while not self.stopped:
            for key, _mask in self.selector.select(0.5):
                try:
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                except BlockingIOError:
                    continue
                if not data:
                    self.selector.unregister(key.fileobj)
                    continue
                now = time.monotonic()
                text = key.data[0] + data
                if b'"hello"' in data:
                    self.hello += 1
                for match in _MARK.finditer(text):
                    if match.end() > len(key.data[0]):
                        self.arrivals.setdefault(int(match.group(1)),
                                                 []).append(now)
                key.data[0] = text[-64:]


def run(args: argparse.Namespace) -> dict[str, Any]:
    server = ServerProcess()
    try:
        server.start("--watch-max-watchers", str(args.watchers + 10),
                     "--threads", "16", schema=True)
        pid = server.proc.pid  # type: ignore[union-attr]
        name = "bench-" + uuid.uuid4().hex[:8]
        created = server.expect(201, "POST", "/v1/allocations",
                                {"resource_class": "none", "name": name},
                                headers=V)
        server.wait_allocation(created["uuid"])
        result: dict[str, Any] = {"watchers": args.watchers,
                                  "changes": args.changes}
        result["without"] = {**_idle(pid),
                             "plain_get": _plain(server.endpoint, name)}
        watchers = Watchers(server.port, args.watchers, name)
        watchers.start()
        deadline = time.monotonic() + 120
        while watchers.hello < args.watchers and time.monotonic() < deadline:
            time.sleep(0.1)
        result["connected"] = watchers.hello
        result["with"] = {**_idle(pid),
                          "plain_get": _plain(server.endpoint, name)}
        answered: dict[int, float] = {}
        with requests.Session() as session:
            for i in range(args.changes):
                session.patch(
                    f"{server.endpoint}/v1/allocations/{created['uuid']}",
                    json=[{"op": "add", "path": "/extra/mark",
                           "value": f"m{i}x"}], headers=V,
                    timeout=30).raise_for_status()
                answered[i] = time.monotonic()
                time.sleep(args.gap)
        time.sleep(2)
        watchers.stopped = True
        latencies = [arrival - answered[i]
                     for i, arrivals in watchers.arrivals.items()
                     for arrival in arrivals if i in answered]
        result["delivered"] = len(latencies)
        result["expected"] = args.changes * watchers.hello
        result["change_to_client"] = _percentiles(latencies)
        result["after_changes"] = _proc(pid)
        return result
    finally:
        server.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--watchers", type=int, default=1000)
    parser.add_argument("--changes", type=int, default=50)
    parser.add_argument("--gap", type=float, default=0.2,
                        help="seconds between changes")
    rawruns.add_option(parser, "watchers")
    args = parser.parse_args()
    result = run(args)
    without, with_ = result["without"], result["with"]
    print(f"watchers connected: {result['connected']} of {args.watchers}")
    print(f"{'':24}{'RSS MiB':>10}{'threads':>9}{'idle CPU %':>12}"
          f"{'GET p50 ms':>12}{'GET p99 ms':>12}")
    for label, row in (("no watchers", without), ("with watchers", with_)):
        print(f"{label:24}{row['rss_mib']:>10.1f}{row['threads']:>9}"
              f"{row['idle_cpu_percent']:>12.2f}"
              f"{row['plain_get']['p50_ms']:>12.2f}"
              f"{row['plain_get']['p99_ms']:>12.2f}")
    lat = result["change_to_client"]
    print(f"change to client: p50 {lat['p50_ms']:.1f} ms, p99 "
          f"{lat['p99_ms']:.1f} ms ({result['delivered']} of "
          f"{result['expected']} deliveries)")
    rawruns.write_json(args.output, result)


if __name__ == "__main__":
    main()
