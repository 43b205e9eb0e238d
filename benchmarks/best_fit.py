"""Best fit and spread on the reference server (issue 49).

``fragmentation``: a fleet of 90 small nodes (4 CPUs) and 10 large ones
(64 CPUs); 90 small requests (``cpus >= 2``) then 10 large ones
(``cpus >= 32``), one at a time, each answered once settled (``Prefer:
wait``).  Run twice on fresh copies of the fleet: with the server's
default order (first fit) and with ``serve --default-order best_fit``
(the requests name no order, so the admin's default decides).  Prints
how many large requests succeed with each; best fit must serve all 10.

``cost``: on a fleet of ``--nodes`` (default 10,000; four sizes, 8
racks), the latency of a plain create (first fit), a best-fit create
(``order: best_fit`` in the request), a plain group of 3 and a group of
3 spread over ``property:rack`` at most one per rack, interleaved so
that drift hits all alike; each allocation is deleted after it is
timed, so the fleet stays as it was.

Usage::

    python -m benchmarks.best_fit fragmentation
    python -m benchmarks.best_fit cost --nodes 10000 --rounds 100

The JSON is printed and written to a new file in ``benchmarks/results/``
(not committed; ``--output``, see :mod:`benchmarks.rawruns`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

import requests

from benchmarks import rawruns, reference

RC = "bench"
_HEADERS = {"X-Baremetal-Alloc-Extensions": "constraints, groups",
            "X-OpenStack-Ironic-API-Version": "1.73", "Prefer": "wait=30"}
SMALL = {"properties": [{"key": "cpus", "min": 2}]}
LARGE = {"properties": [{"key": "cpus", "min": 32}]}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _inventory(path: str, nodes: dict[str, dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({name: {"driver": "fake-hardware", "resource_class": RC,
                          "properties": props}
                   for name, props in nodes.items()}, handle)


def _fleet(nodes: dict[str, dict[str, Any]]) -> str:
    """A new SQLite database with ``nodes`` (name -> properties)."""
    workdir = tempfile.mkdtemp(prefix="bench-best-fit-")
    db = f"sqlite:///{workdir}/fleet.sqlite"
    reference.server("db", "upgrade", "--db", db)
    path = os.path.join(workdir, "inventory.json")
    _inventory(path, nodes)
    log(f"enrolling {len(nodes)} nodes")
    reference.server("enroll", "--db", db, path)
    return db


def _create(session: requests.Session, endpoint: str,
            constraints: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"resource_class": RC}
    if constraints:
        body["constraints"] = constraints
    response = session.post(endpoint + "/v1/allocations", json=body,
                            headers=_HEADERS, timeout=60)
    response.raise_for_status()
    found: dict[str, Any] = response.json()
    return found


def fragmentation_run(order: str) -> dict[str, Any]:
    """One run on a fresh fleet with ``serve --default-order order``."""
    nodes = {f"small-{i}": {"cpus": 4, "memory_mb": 8192}
             for i in range(90)}
    nodes.update({f"large-{i}": {"cpus": 64, "memory_mb": 262144}
                  for i in range(10)})
    target = reference.start(_fleet(nodes),
                             extra=("--default-order", order))
    try:
        session = requests.Session()
        small = [_create(session, target.endpoint, SMALL)
                 for _ in range(90)]
        large = [_create(session, target.endpoint, LARGE)
                 for _ in range(10)]
    finally:
        target.stop()
    return {"order": order,
            "small_active": sum(a["state"] == "active" for a in small),
            "large_active": sum(a["state"] == "active" for a in large),
            "large_error": next((a["last_error"] for a in large
                                 if a["state"] != "active"), None)}


def bench_fragmentation() -> dict[str, Any]:
    runs = [fragmentation_run("first_fit"), fragmentation_run("best_fit")]
    for run in runs:
        log(f"{run['order']:>9}: small {run['small_active']}/90, "
            f"large {run['large_active']}/10")
    return {"runs": runs,
            "best_fit_serves_all_large": runs[1]["large_active"] == 10}


def _cost_fleet(count: int) -> dict[str, dict[str, Any]]:
    sizes = ((4, 8192), (8, 32768), (16, 65536), (64, 262144))
    return {f"node-{i}": {"cpus": sizes[i % 4][0],
                          "memory_mb": sizes[i % 4][1],
                          "rack": f"r{(i // 4) % 8}"}
            for i in range(count)}


def _timed(action: Callable[[], list[str]], session: requests.Session,
           endpoint: str) -> float:
    """Milliseconds ``action`` took; what it made is deleted after."""
    start = time.perf_counter()
    made = action()
    elapsed = (time.perf_counter() - start) * 1000.0
    for ident in made:
        session.delete(f"{endpoint}/v1/allocations/{ident}",
                       headers=_HEADERS, timeout=60).raise_for_status()
    return elapsed


def _kinds(session: requests.Session, endpoint: str
           ) -> dict[str, Callable[[], list[str]]]:
    def create(constraints: dict[str, Any] | None) -> list[str]:
        made = _create(session, endpoint, constraints)
        if made["state"] != "active":
            raise RuntimeError(f"allocation failed: {made['last_error']}")
        return [made["uuid"]]

    def group(spread: dict[str, Any] | None) -> list[str]:
        body: dict[str, Any] = {"resource_class": RC, "count": 3}
        if spread:
            body["spread"] = spread
        response = session.post(endpoint + "/v1/allocation_groups",
                                json=body, headers=_HEADERS, timeout=60)
        if response.status_code != 201:
            raise RuntimeError(f"group failed: {response.text[:300]}")
        return [a["uuid"] for a in response.json()["allocations"]]

    return {
        "plain_create": lambda: create(None),
        "best_fit_create": lambda: create(
            {**SMALL, "order": "best_fit"}),
        "plain_group_of_3": lambda: group(None),
        "spread_group_of_3": lambda: group(
            {"over": "property:rack", "max_per_domain": 1}),
    }


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"mean_ms": round(statistics.fmean(values), 3),
            "p50_ms": round(statistics.median(values), 3),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 3)}


def bench_cost(nodes: int, rounds: int) -> dict[str, Any]:
    target = reference.start(_fleet(_cost_fleet(nodes)))
    try:
        session = requests.Session()
        kinds = _kinds(session, target.endpoint)
        for action in kinds.values():  # warm-up
            for _ in range(5):
                _timed(action, session, target.endpoint)
        times: dict[str, list[float]] = {name: [] for name in kinds}
        names = list(kinds)
        for index in range(rounds):
            shift = index % len(names)
            for name in names[shift:] + names[:shift]:
                times[name].append(
                    _timed(kinds[name], session, target.endpoint))
    finally:
        target.stop()
    result: dict[str, Any] = {"nodes": nodes, "rounds": rounds,
                              **{k: _stats(v) for k, v in times.items()}}
    base = result["plain_create"]["p50_ms"]
    result["best_fit_p50_ratio"] = round(
        result["best_fit_create"]["p50_ms"] / base, 2)
    result["spread_p50_ratio_to_plain_group"] = round(
        result["spread_group_of_3"]["p50_ms"]
        / result["plain_group_of_3"]["p50_ms"], 2)
    for name in names:
        log(f"{name:>18}: p50 {result[name]['p50_ms']:8.2f} ms, "
            f"mean {result[name]['mean_ms']:8.2f} ms")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("fragmentation")
    cost = sub.add_parser("cost")
    cost.add_argument("--nodes", type=int, default=10_000)
    cost.add_argument("--rounds", type=int, default=100)
    rawruns.add_option(parser, "best-fit")
    args = parser.parse_args(argv)
    if args.what == "fragmentation":
        result = bench_fragmentation()
    else:
        result = bench_cost(args.nodes, args.rounds)
    run = {"run": str(uuid.uuid4())[:8], "what": args.what,
           "arguments": sys.argv[1:] if argv is None else argv,
           "result": result}
    print(json.dumps(run, indent=2))
    rawruns.write_json(args.output, run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
