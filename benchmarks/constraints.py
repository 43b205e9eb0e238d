"""Cost of node constraints (issue 15).

``reference``: on the reference server with a large fleet, the latency
of an allocation with three property constraints against one without
(both answered in one request with ``Prefer: wait``), interleaved so that
drift hits both alike; plus one ``explain`` request.  The fleet varies
``cpus``, ``memory_mb`` and ``cpu_arch`` so that the constraints keep
about 40 % of the nodes.

``ironic``: the SDK's client-side prefiltering against real Ironic at
several fleet sizes: HTTP requests made and seconds taken by
``explain``, by a constrained ``create_allocation`` (listing + POST) and
by one whose constraints match nothing (two listings, nothing created).

Usage::

    python -m benchmarks.constraints reference --nodes 100000
    python -m benchmarks.constraints ironic --sizes 200 1000

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
from keystoneauth1 import session as ks_session

from baremetal_allocclient.constraints import Constraints, Op
from baremetal_allocclient.constraints import property_constraint as prop
from baremetal_allocclient.v1.client import Client
from benchmarks import ironic, rawruns, reference

RC = "bench"
_EXT = {"X-Baremetal-Alloc-Extensions": "constraints",
        "X-OpenStack-Ironic-API-Version": "1.73", "Prefer": "wait=30"}
WIRE = {"properties": [{"key": "cpus", "min": 16},
                       {"key": "memory_mb", "min": 65536},
                       {"key": "cpu_arch", "eq": "x86_64"}]}
SDK_CONSTRAINTS = Constraints(properties=(
    prop("cpus", Op.MIN, 16), prop("memory_mb", Op.MIN, 65536),
    prop("cpu_arch", Op.EQ, "x86_64")))
NOTHING = Constraints(properties=(prop("cpus", Op.MIN, 1024),))


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def write_inventory(path: str, count: int) -> None:
    """Nodes whose properties tell the three constraints apart."""
    cpus = (8, 16, 32, 64)
    memory = (32768, 65536, 131072)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("{")
        for index in range(count):
            entry = {"driver": "fake-hardware", "resource_class": RC,
                     "properties": {
                         "cpus": cpus[index % 4],
                         "memory_mb": memory[index % 3],
                         "cpu_arch": ("aarch64" if index % 10 == 0
                                      else "x86_64")}}
            sep = "," if index else ""
            handle.write(f'{sep}"node-{index}": {json.dumps(entry)}\n')
        handle.write("}\n")


def _timed_allocation(session: requests.Session, endpoint: str,
                      constrained: bool) -> float:
    body: dict[str, Any] = {"resource_class": RC}
    if constrained:
        body["constraints"] = WIRE
    start = time.perf_counter()
    response = session.post(endpoint + "/v1/allocations", json=body,
                            headers=_EXT, timeout=60)
    elapsed = time.perf_counter() - start
    if response.status_code != 201 or response.json()["state"] != "active":
        raise RuntimeError(f"allocation failed: {response.text[:500]}")
    return elapsed * 1000.0


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"mean_ms": round(statistics.fmean(values), 3),
            "p50_ms": round(statistics.median(values), 3),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 3)}


def enrolled_fleet(nodes: int) -> tuple[str, float]:
    """A new SQLite database with ``nodes`` enrolled; (URL, seconds the
    enroll command took)."""
    workdir = tempfile.mkdtemp(prefix="bench-constraints-")
    db = f"sqlite:///{workdir}/fleet.sqlite"
    reference.server("db", "upgrade", "--db", db)
    inventory = os.path.join(workdir, "inventory.json")
    write_inventory(inventory, nodes)
    log(f"enrolling {nodes} nodes")
    start = time.perf_counter()
    reference.server("enroll", "--db", db, inventory)
    return db, time.perf_counter() - start


def bench_reference(nodes: int, allocations: int,
                    reuse: str | None = None) -> dict[str, Any]:
    if reuse is None:
        db, enroll_s = enrolled_fleet(nodes)
    else:  # a fleet enrolled by an earlier run (``--reuse-db``)
        db, enroll_s = reuse, float("nan")
        reference.server("db", "upgrade", "--db", db)
    target = reference.start(db)
    try:
        session = requests.Session()
        endpoint = target.endpoint
        for _ in range(20):  # warm-up: statement caches, page cache
            _timed_allocation(session, endpoint, False)
            _timed_allocation(session, endpoint, True)
        plain: list[float] = []
        constrained: list[float] = []
        for index in range(allocations):
            order = (False, True) if index % 2 else (True, False)
            for kind in order:
                ms = _timed_allocation(session, endpoint, kind)
                (constrained if kind else plain).append(ms)
        explain_ms = []
        for _ in range(5):
            start = time.perf_counter()
            response = session.post(
                endpoint + "/v1/allocation_explain",
                json={"resource_class": RC, "constraints": WIRE},
                headers=_EXT, timeout=120)
            explain_ms.append((time.perf_counter() - start) * 1000.0)
            response.raise_for_status()
        funnel = response.json()
    finally:
        target.stop()
    result = {
        "nodes": nodes, "allocations_each": allocations,
        "enroll_s": round(enroll_s, 1),
        "plain": _stats(plain), "constrained": _stats(constrained),
        "explain_ms_median": round(statistics.median(explain_ms), 1),
        "explain": funnel,
    }
    result["ratio_mean"] = round(
        result["constrained"]["mean_ms"] / result["plain"]["mean_ms"], 3)
    result["ratio_p50"] = round(
        result["constrained"]["p50_ms"] / result["plain"]["p50_ms"], 3)
    return result


class _Counter:
    """Counts HTTP requests made through one requests.Session."""

    def __init__(self) -> None:
        self.count = 0

    def hook(self, response: requests.Response, *_a: Any,
             **_k: Any) -> requests.Response:
        self.count += 1
        return response


def _measure(counter: _Counter, action: Callable[[], Any]
             ) -> tuple[Any, dict[str, Any]]:
    before = counter.count
    start = time.perf_counter()
    try:
        result = action()
    except Exception as exc:  # the failing case is measured too
        result = exc
    elapsed = time.perf_counter() - start
    return result, {"requests": counter.count - before,
                    "seconds": round(elapsed, 3)}


def bench_ironic(sizes: list[int]) -> list[dict[str, Any]]:
    target = ironic.start()
    try:
        (template,) = target.make_nodes(1, RC, name_prefix="tpl", each=[
            {"properties": {"cpus": 32, "memory_mb": 131072,
                            "cpu_arch": "x86_64"}}])
        total = 1
        counter = _Counter()
        http = requests.Session()
        http.hooks["response"].append(counter.hook)
        client = Client.from_session(
            ks_session.Session(session=http),
            endpoint_override=target.endpoint)
        client.supports_constraints()  # one GET /v1, asked once
        rows = []
        for size in sizes:
            total = ironic.clone_nodes(target, template["uuid"],
                                       size - total)
            log(f"ironic: {total} nodes")
            doc, explain = _measure(counter, lambda: client.explain(
                RC, constraints=SDK_CONSTRAINTS))
            created, create = _measure(counter, lambda: client.
                                       create_allocation(
                                           RC, constraints=SDK_CONSTRAINTS))
            client.wait_for_allocation(created, timeout=120)
            client.delete_allocation(created.uuid)
            failed, nothing = _measure(counter, lambda: client.
                                       create_allocation(
                                           RC, constraints=NOTHING))
            rows.append({"nodes": total, "explain": explain,
                         "create_with_constraints": create,
                         "create_nothing_matches": nothing,
                         "candidates": doc["candidates"],
                         "nothing_error": str(failed)[:200]})
        return rows
    finally:
        target.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    ref = sub.add_parser("reference")
    ref.add_argument("--nodes", type=int, default=100_000)
    ref.add_argument("--allocations", type=int, default=300)
    ref.add_argument("--reuse-db", default=None,
                     help="an SQLite URL enrolled by an earlier run")
    iro = sub.add_parser("ironic")
    iro.add_argument("--sizes", type=int, nargs="+", default=[200, 1000])
    rawruns.add_option(parser, "constraints")
    args = parser.parse_args(argv)
    if args.what == "reference":
        result: Any = bench_reference(args.nodes, args.allocations,
                                      args.reuse_db)
    else:
        result = bench_ironic(args.sizes)
    run = {"run": str(uuid.uuid4())[:8], "what": args.what, "result": result}
    print(json.dumps(run, indent=2))
    rawruns.write_json(args.output, run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
