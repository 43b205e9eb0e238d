"""Allocations/s on a three-node Galera cluster beside one MariaDB server.

Both set-ups run three ``baremetal-alloc-server serve`` processes: on
Galera one per node (multi-master), on the single server all three on
it.  Each round enrolls ``--nodes`` fresh nodes and sends as many creates
at once, spread round-robin over the three processes, each with
``Prefer: wait`` so its answer is the settled allocation; the figure is
allocations settled per second of wall time.  Rounds alternate between
the set-ups, so both see the same machine.  It is a benchmark, not a
test: it prints a table and writes its JSON to a new file in
``benchmarks/results/`` (not committed; ``--output``, see
:mod:`benchmarks.rawruns`).

Run from the repository root (needs mariadbd and galera-4)::

    python -m benchmarks.galera --nodes 200 --rounds 3
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import datetime
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from typing import Any

import requests

from baremetal_allocclient.tests.fixtures import launcher
from baremetal_allocclient.tests.fixtures.launcher import ServerProcess
from baremetal_allocclient.tests.functional.multiprocess import (
    _cluster,
    _galera,
)
from benchmarks import rawruns

HEADERS = {"X-OpenStack-Ironic-API-Version": "latest",
           "Prefer": "wait=60"}


class SetUp:
    """A database (Galera or single) with three ``serve`` processes."""

    def __init__(self, name: str, galera: bool) -> None:
        self.name = name
        self.cluster = _galera.GaleraCluster(3 if galera else 1,
                                             galera=galera)
        self.servers: list[ServerProcess] = []
        self.workdir = tempfile.mkdtemp(prefix="bm-alloc-bench-galera-")

    def url(self, index: int) -> str:
        node = self.cluster.nodes[index % len(self.cluster.nodes)]
        return node.url(self.cluster.database)

    def start(self) -> None:
        self.cluster.start()
        launcher.upgrade(self.url(0))
        for index in range(3):
            self.servers.append(_cluster.start(
                self.url(index), f"{self.name}-{index}", "--workers", "8"))

    def stop(self) -> None:
        for server in self.servers:
            server.cleanup()
        self.cluster.stop()

    def round(self, nodes: int, threads: int) -> dict[str, Any]:
        rc = "rc-" + uuid.uuid4().hex[:10]
        _cluster.enroll(self.url(0), self.workdir, nodes, rc)
        before = self.cluster.counters() if self.cluster.galera else {}
        started = time.perf_counter()
        answers = _burst(self.servers, nodes, rc, threads)
        final = _cluster.wait_settled(self.servers[0], rc, timeout=300)
        wall = time.perf_counter() - started
        states = collections.Counter(a["state"] for a in final)
        after = self.cluster.counters() if self.cluster.galera else {}
        return {
            "setup": self.name, "allocations": nodes,
            "wall_s": round(wall, 2),
            "allocations_per_s": round(states["active"] / wall, 1),
            "statuses": dict(collections.Counter(answers)),
            "states": dict(states),
            "cert_failures": sum(after[i]["wsrep_local_cert_failures"]
                                 - before[i]["wsrep_local_cert_failures"]
                                 for i in after if i in before),
            "bf_aborts": sum(after[i]["wsrep_local_bf_aborts"]
                             - before[i]["wsrep_local_bf_aborts"]
                             for i in after if i in before),
            "loadavg": round(os.getloadavg()[0], 2),
        }


def _burst(servers: list[ServerProcess], count: int, rc: str,
           threads: int) -> list[int]:
    sessions: dict[int, requests.Session] = {}

    def one(index: int) -> int:
        session = sessions.setdefault(index % threads, requests.Session())
        server = servers[index % len(servers)]
        resp = session.post(server.endpoint + "/v1/allocations",
                            json={"resource_class": rc}, headers=HEADERS,
                            timeout=120)
        return resp.status_code

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        return list(pool.map(one, range(count)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=24)
    rawruns.add_option(parser, "galera")
    args = parser.parse_args(argv)
    setups = [SetUp("galera-3-nodes", True), SetUp("mariadb-single", False)]
    rows: list[dict[str, Any]] = []
    try:
        for setup in setups:
            setup.start()
        for number in range(args.rounds):
            for setup in setups:
                row = setup.round(args.nodes, args.threads)
                row["round"] = number + 1
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        for setup in setups:
            setup.stop()
    summary = {
        setup.name: statistics.median(r["allocations_per_s"] for r in rows
                                      if r["setup"] == setup.name)
        for setup in setups
    }
    stamp = datetime.datetime.now(datetime.timezone.utc)
    rawruns.write_json(args.output, {
        "when": stamp.isoformat(timespec="seconds"),
        "args": {k: v for k, v in vars(args).items() if k != "output"},
        "rounds": rows, "median_allocations_per_s": summary})
    for name, value in summary.items():
        print(f"{name:16s} median {value:6.1f} allocations/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
