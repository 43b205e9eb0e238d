"""Allocation benchmark: the reference server beside real Ironic.

A benchmark, not a test.  One run measures, with the same client
(:mod:`benchmarks.load`), node count and concurrency:

* ``compare``: reference server (SQLite, one process) and real Ironic 39
  (``fake-hardware``, SQLite, one process, installed by the functional-test
  launcher into ``<repo>/.venv-ironic``): allocations/s and POST-to-active
  latency for N nodes / N allocations at concurrency 1, 8 and 32, and a
  burst of 2N requests on N nodes.  The reference server is measured with
  a client that only polls and with one that sends ``Prefer: wait`` (as
  the SDK and CLI do); Ironic ignores that header, so it is measured once;
* ``fleet``: cost per allocation with 1k, 10k, 100k nodes (reference;
  Ironic up to the sizes given by ``--ironic-fleet``, grown by copying an
  API-enrolled node row, see :mod:`benchmarks.ironic`), the selection
  query plan, enrollment time from an inventory file, server RSS, and
  listing every allocation (100k) through the SDK iterator;
* ``postgresql``: the reference server on PostgreSQL with 1, 2 and 4
  processes sharing one new database (created and dropped here), with the
  ``Prefer: wait`` client;
* ``profile`` (with ``--profile``): py-spy samples of the reference server
  during a concurrency-8 run, summarised by function.

Usage (from the repository root)::

    .venv/bin/pip install -r benchmarks/requirements.txt
    .venv/bin/python -m benchmarks.run --quick      # ~5 minutes
    .venv/bin/python -m benchmarks.run              # full, ~30 minutes

The run's JSON goes to a new file in ``benchmarks/results/`` (not
committed; ``--output``, see :mod:`benchmarks.rawruns`), and with
``--plots`` the PNG charts beside it, in ``<that file>-plots/``: the
charts of ``doc/source/internals/benchmarks.rst`` are copies of them,
made when its tables are updated from the same run.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import psutil  # type: ignore[import-untyped]

from benchmarks import ironic, load, rawruns, reference

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RC = "bench"
#: ``Prefer: wait`` seconds of the Prefer-sending client (the SDK's value).
PREFER_WAIT = 10


def log(message: str) -> None:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%H:%M:%S")
    print(f"[{stamp}] {message}", file=sys.stderr, flush=True)


def machine() -> dict[str, Any]:
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
    }


def loadavg() -> float:
    return round(os.getloadavg()[0], 2)


def _tree(pid: int) -> list[Any]:
    """The process and its descendants: Ironic serves from a forked
    worker under its master process."""
    process = psutil.Process(pid)
    return [process, *process.children(recursive=True)]


def rss_mib(pid: int) -> float:
    """RSS of the process and its descendants, summed (pages a fork
    shares are counted once per process)."""
    return round(float(sum(p.memory_info().rss for p in _tree(pid)))
                 / 2**20, 1)


# -- compare: reference vs Ironic --------------------------------------------

def cpu_seconds(pids: list[int]) -> Callable[[], float]:
    """User + system CPU seconds the processes and their descendants
    used so far, summed."""
    processes = [p for pid in pids for p in _tree(pid)]

    def read() -> float:
        return float(sum(t.user + t.system
                         for t in (p.cpu_times() for p in processes)))

    return read


def _levels(client: load.Client, nodes: int, repeats: int,
            concurrencies: list[int], settle: float,
            server_pids: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for conc in concurrencies:
        runs = load.repeated(client, nodes, conc, RC, repeats, settle,
                             server_cpu=cpu_seconds(server_pids))
        out[str(conc)] = {"median": load.median_of(runs), "runs": runs,
                          "loadavg": loadavg()}
        med = out[str(conc)]["median"]
        log(f"  c={conc}: {med['allocations_per_s']}/s p50 "
            f"{med['p50_ms']} p95 {med['p95_ms']} ms "
            f"not active {med['not_active']} server CPU "
            f"{med['server_cpu_ms_per_allocation']} ms/allocation")
    return out


def _burst(client: load.Client, nodes: int, settle: float
           ) -> dict[str, Any]:
    requests = 2 * nodes
    result = client.run(requests, min(requests, 64), RC, settle)
    summary = result.summary()
    summary["nodes"] = nodes
    summary["settled_s"] = summary.pop("wall_s")
    summary["loadavg"] = loadavg()
    client.cleanup(result)
    log(f"  burst {requests} on {nodes}: {summary['states']} in "
        f"{summary['settled_s']} s")
    return summary


def compare(args: argparse.Namespace, workdir: str) -> dict[str, Any]:
    nodes = args.nodes
    out: dict[str, Any] = {"nodes": nodes, "concurrency": args.concurrency,
                           "repeats": args.repeats}
    # Reference: fleet from an inventory file (enrollment is measured
    # separately); the allocation path is the same API as Ironic's.
    db = f"sqlite:///{workdir}/compare.sqlite"
    reference.server("db", "upgrade", "--db", db)
    reference.enroll(db, nodes, RC, workdir)
    target = reference.start(db)
    try:
        # Two clients: one that only polls (any Ironic client) and one
        # that sends ``Prefer: wait`` as this project's SDK and CLI do.
        for key, client in (
                ("reference", load.Client([target.endpoint])),
                ("reference_prefer_wait",
                 load.Client([target.endpoint], prefer_wait=PREFER_WAIT))):
            log(f"{key}: {nodes} nodes")
            out[key] = _levels(client, nodes, args.repeats,
                               args.concurrency, args.settle, [target.pid])
            out[key]["burst"] = _burst(client, nodes, args.settle)
            out[key]["rss_mib"] = rss_mib(target.pid)
        if args.profile:
            out["profile"] = {
                key: profile(target, client, nodes, workdir)
                for key, client in (
                    ("prefer_wait", load.Client(
                        [target.endpoint], prefer_wait=PREFER_WAIT)),
                    ("polling", load.Client([target.endpoint])))
            }
    finally:
        target.stop()
    if args.no_ironic:
        return out
    log(f"ironic: starting, enrolling {nodes} nodes through its API")
    started = time.perf_counter()
    ir = ironic.start()
    try:
        enrolled = ir.make_nodes(nodes, RC)
        out["ironic_enroll_s"] = round(time.perf_counter() - started, 1)
        # The Prefer-sending client: Ironic ignores the header (the
        # contract suite checks it), so it stands for both clients.
        client = load.Client([ir.endpoint], prefer_wait=PREFER_WAIT)
        out["ironic"] = _levels(client, nodes, args.repeats,
                                args.concurrency, args.settle, [ir.pid])
        out["ironic"]["burst"] = _burst(client, nodes, args.settle)
        out["ironic"]["rss_mib"] = rss_mib(ir.pid)
        out["ironic_fleet"] = ironic_fleet(args, ir, client,
                                           enrolled[0]["uuid"], nodes)
    finally:
        ir.stop()
    out["ratios"] = ratios(out, "reference")
    out["ratios_prefer_wait"] = ratios(out, "reference_prefer_wait")
    return out


def ratios(out: dict[str, Any], key: str) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for conc in out["concurrency"]:
        ref = out[key][str(conc)]["median"]
        iro = out["ironic"][str(conc)]["median"]
        entry: dict[str, float | None] = {}
        if ref["allocations_per_s"] and iro["allocations_per_s"]:
            entry["throughput_x"] = round(
                ref["allocations_per_s"] / iro["allocations_per_s"], 1)
        for metric in ("p50_ms", "p95_ms", "p99_ms"):
            if ref[metric] and iro[metric]:
                entry[metric.replace("_ms", "_fraction")] = round(
                    ref[metric] / iro[metric], 4)
        result[str(conc)] = entry
    return result


def ironic_fleet(args: argparse.Namespace, ir: Any, client: load.Client,
                 template: str, nodes: int) -> list[dict[str, Any]]:
    rows = []
    total = nodes
    for size in args.ironic_fleet:
        if size > total:
            total = ironic.clone_nodes(ir, template, size - total)
        log(f"ironic fleet {total}")
        rows.append(_fleet_point(client, total,
                                 args.fleet_allocations_ironic,
                                 args.settle, concurrent=False))
    return rows


def _fleet_point(client: load.Client, size: int, count: int,
                 settle: float, concurrent: bool = True) -> dict[str, Any]:
    """Cost per allocation at one fleet size: the mean POST-to-active
    time of sequential allocations (``cost_ms``) and, for the reference
    server, the wall time per allocation at concurrency 8."""
    seq = load.median_of(load.repeated(client, count, 1, RC, 1, settle))
    point: dict[str, Any] = {
        "nodes": size,
        "allocations": count,
        "c1": seq,
        "cost_ms": seq["mean_ms"],
        "loadavg": loadavg(),
    }
    if concurrent:
        med = load.median_of(load.repeated(client, count, 8, RC, 1, settle))
        point["c8"] = med
        point["c8_cost_ms"] = (round(1000.0 / med["allocations_per_s"], 2)
                               if med["allocations_per_s"] else None)
    log(f"  {size} nodes: cost {point['cost_ms']} ms sequential, "
        f"c8 {point.get('c8_cost_ms')} ms/allocation")
    return point


# -- fleet: reference at 1k/10k/100k -----------------------------------------

def fleet(args: argparse.Namespace, workdir: str) -> dict[str, Any]:
    points = []
    for size in args.fleet:
        path = f"{workdir}/fleet-{size}.sqlite"
        db = f"sqlite:///{path}"
        reference.server("db", "upgrade", "--db", db)
        log(f"reference fleet {size}: enrolling from an inventory file")
        enroll_s = reference.enroll(db, size, RC, workdir)
        target = reference.start(db)
        try:
            pid = target.pid
            idle = rss_mib(pid)
            client = load.Client([target.endpoint])
            point = _fleet_point(client, size, args.fleet_allocations,
                                 args.settle)
            point.update({
                "enroll_s": round(enroll_s, 2),
                "enroll_nodes_per_s": round(size / enroll_s, 1),
                "rss_idle_mib": idle,
                "rss_after_mib": rss_mib(pid),
                "plan": reference.explain_selection(db, RC),
            })
        finally:
            target.stop()
        if size == max(args.fleet):
            point["list"] = list_all(db, workdir)
        os.unlink(path)
        points.append(point)
    for key in ("cost_ms", "c8_cost_ms"):
        base = points[0][key]
        for point in points:
            point[key.replace("ms", "vs_first")] = (
                round(point[key] / base, 2) if base and point[key] else None)
    return {"points": points}


def list_all(db: str, workdir: str) -> dict[str, Any]:
    """Seed one allocation per node, restart, list them all via the SDK."""
    seeded = reference.seed_allocations(db, RC)
    log(f"  listing {seeded} allocations through the SDK iterator")
    target = reference.start(db)
    try:
        pid = target.pid
        before = rss_mib(pid)
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.list_client", target.endpoint],
            capture_output=True, text=True, cwd=REPO, timeout=1800,
            check=True)
        result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()
                                            [-1])
        result["server_rss_before_mib"] = before
        result["server_rss_after_mib"] = rss_mib(pid)
        result["loadavg"] = loadavg()
    finally:
        target.stop()
    log(f"  listed {result['count']} in {result['seconds']} s, client "
        f"peak {result['peak_rss_mib']} MiB, samples {result['rss_mib_at']}")
    return result


# -- PostgreSQL: 1 and 4 processes -------------------------------------------

def postgresql(args: argparse.Namespace, workdir: str) -> dict[str, Any]:
    out: dict[str, Any] = {"nodes": args.pg_nodes}
    with reference.postgresql_database() as db:
        redacted = db.rsplit("@", 1)[-1]
        out["database"] = redacted
        reference.server("db", "upgrade", "--db", db)
        out["enroll_s"] = round(reference.enroll(db, args.pg_nodes, RC,
                                                 workdir), 2)
        out["plan"] = reference.explain_selection(db, RC)
        for processes in args.pg_processes:
            targets = [reference.start(db, name=f"bench-{i}")
                       for i in range(processes)]
            try:
                client = load.Client([t.endpoint for t in targets],
                                     prefer_wait=PREFER_WAIT)
                log(f"postgresql, {processes} process(es)")
                levels = _levels(client, args.pg_allocations, args.repeats,
                                 args.pg_concurrency, args.settle,
                                 [t.pid for t in targets])
                levels["rss_mib"] = [rss_mib(t.pid)
                                     for t in targets]
                out[str(processes)] = levels
            finally:
                for t in targets:
                    t.stop()
    return out


# -- profile ---------------------------------------------------------------

#: Batches sampled by ``--profile`` (the nodes are freed between them, so
#: the DELETEs are in the profile too, under ``delete_allocation``).
PROFILE_BATCHES = 5


def profile(target: Any, client: load.Client, nodes: int,
            workdir: str) -> dict[str, Any]:
    """Sample the server with py-spy during concurrency-8 batches.

    Only the thread holding the GIL is sampled (``--gil``): the server is
    one Python process, so that is where its CPU goes.
    """
    py_spy = shutil.which("py-spy") or os.path.join(
        os.path.dirname(sys.executable), "py-spy")
    raw = os.path.join(workdir, "profile.txt")
    spy = subprocess.Popen(
        [py_spy, "record", "--pid", str(target.pid), "--rate",
         "1000", "--format", "raw", "--output", raw, "--threads",
         "--gil"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)
    for _ in range(PROFILE_BATCHES):
        result = client.run(nodes, 8, RC)
        client.cleanup(result)
    spy.send_signal(2)
    _, err = spy.communicate(timeout=60)
    if not os.path.exists(raw):
        return {"error": err.decode()[-500:]}
    summary = summarise_profile(raw)
    summary["run"] = result.summary()
    return summary


def summarise_profile(raw: str, top: int = 25) -> dict[str, Any]:
    """Inclusive and self sample counts per function from collapsed
    stacks, worker and request threads only (idle waits excluded)."""
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    with open(raw) as handle:
        for line in handle:
            stack, _, count_text = line.rstrip().rpartition(" ")
            if not stack:
                continue
            count = int(count_text)
            frames = stack.split(";")
            leaf = frames[-1]
            if any(word in leaf for word in (
                    "wait (threading", "select (selectors", "_worker (",
                    "accept (", "poll (", "sleep", "get (queue")):
                continue
            total += count
            own[_frame(leaf)] += count
            for name in {_frame(f) for f in frames}:
                inclusive[name] += count
    return {
        "busy_samples": total,
        "inclusive": [(n, c, round(100 * c / total, 1))
                      for n, c in inclusive.most_common(top)] if total else [],
        "self": [(n, c, round(100 * c / total, 1))
                 for n, c in own.most_common(top)] if total else [],
    }


def _frame(frame: str) -> str:
    # "func (path/to/module.py:123)" -> "func (module.py)"
    name, _, where = frame.partition(" (")
    where = where.rstrip(")").rsplit(":", 1)[0]
    return f"{name} ({'/'.join(where.split('/')[-2:])})"


# -- output ----------------------------------------------------------------

def table(results: dict[str, Any]) -> str:
    lines = []
    m = results["machine"]
    lines.append(f"{m['date_utc']}  {m['cpu']} x{m['cpus']}  "
                 f"load {m['loadavg_start']} -> {m.get('loadavg_end')}")
    comp = results.get("compare")
    if comp:
        lines.append("")
        lines.append(f"Allocation, {comp['nodes']} nodes / {comp['nodes']} "
                     f"allocations, median of {comp['repeats']}")
        lines.append(f"{'server':<10}{'conc':>5}{'alloc/s':>10}"
                     f"{'(settled)':>10}{'p50 ms':>9}"
                     f"{'p95 ms':>9}{'p99 ms':>9}{'failed':>8}"
                     f"{'cpu ms':>8}")
        for name in ("reference", "reference_prefer_wait", "ironic"):
            if name not in comp:
                continue
            for conc in comp["concurrency"]:
                med = comp[name][str(conc)]["median"]
                label = _LABELS[name]
                lines.append(
                    f"{label:<10}{conc:>5}{_f(med['allocations_per_s']):>10}"
                    f"{_f(med['allocations_per_s_excluding_stuck']):>10}"
                    f"{_f(med['p50_ms']):>9}{_f(med['p95_ms']):>9}"
                    f"{_f(med['p99_ms']):>9}{med['not_active']:>8}"
                    f"{_f(med.get('server_cpu_ms_per_allocation')):>8}")
        for key, name in (("ratios", "ref-poll"),
                          ("ratios_prefer_wait", "ref-wait")):
            for conc, entry in comp.get(key, {}).items():
                lines.append(f"{name} c={conc}: throughput x"
                             f"{entry.get('throughput_x')}, p95 "
                             f"{name}/ironic {entry.get('p95_fraction')}")
        for name in ("reference", "reference_prefer_wait", "ironic"):
            if name in comp:
                b = comp[name]["burst"]
                lines.append(f"burst {_LABELS[name]}: {b['requested']} "
                             f"requests on "
                             f"{b['nodes']} nodes -> {b['states']} settled "
                             f"in {b['settled_s']} s")
        for p in comp.get("ironic_fleet", []):
            lines.append(f"ironic fleet {p['nodes']:>7}: cost "
                         f"{p['cost_ms']} ms (mean sequential "
                         f"POST-to-active), failed {p['c1']['not_active']}")
    fl = results.get("fleet")
    if fl:
        lines.append("")
        lines.append("Reference fleet: cost = mean sequential POST-to-active"
                     " ms; c8 = wall ms per allocation at concurrency 8")
        lines.append(f"{'nodes':>8}{'cost ms':>9}{'x first':>8}"
                     f"{'c8 ms':>8}{'x first':>8}{'enroll s':>10}"
                     f"{'nodes/s':>9}{'RSS MiB':>9}")
        for p in fl["points"]:
            lines.append(
                f"{p['nodes']:>8}{_f(p['cost_ms']):>9}"
                f"{_f(p['cost_vs_first']):>8}{_f(p['c8_cost_ms']):>8}"
                f"{_f(p['c8_cost_vs_first']):>8}{p['enroll_s']:>10}"
                f"{p['enroll_nodes_per_s']:>9}{p['rss_after_mib']:>9}")
        last = fl["points"][-1]
        lines.append("selection plan: " + " | ".join(last["plan"][1:]))
        if "list" in last:
            li = last["list"]
            lines.append(
                f"list {li['count']} allocations via SDK: {li['seconds']} s, "
                f"client RSS {li['rss_mib_at']} peak {li['peak_rss_mib']} "
                f"MiB; server RSS {li['server_rss_before_mib']} -> "
                f"{li['server_rss_after_mib']} MiB")
    pg = results.get("postgresql")
    if pg:
        lines.append("")
        lines.append(f"PostgreSQL, {pg['nodes']} nodes")
        for key, levels in pg.items():
            if not key.isdigit():
                continue
            for conc, entry in levels.items():
                if not conc.isdigit():
                    continue
                med = entry["median"]
                lines.append(
                    f"  {key} process(es) c={conc}: "
                    f"{med['allocations_per_s']}/s p50 {med['p50_ms']} "
                    f"p95 {med['p95_ms']} ms failed {med['not_active']}")
    return "\n".join(lines)


_LABELS = {"reference": "ref-poll", "reference_prefer_wait": "ref-wait",
           "ironic": "ironic"}


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="small sizes, one repeat (smoke run)")
    p.add_argument("--only", default="compare,fleet,postgresql",
                   help="comma-separated sections to run")
    p.add_argument("--no-ironic", action="store_true")
    p.add_argument("--profile", action="store_true",
                   help="py-spy the reference server during a c=8 run")
    p.add_argument("--plots", action="store_true",
                   help="also write PNG charts, to <output>-plots/")
    rawruns.add_option(p, "allocation")
    p.add_argument("--settle", type=float, default=30.0,
                   help="seconds an allocation may stay allocating")
    args = p.parse_args(argv)
    quick = args.quick
    args.nodes = 40 if quick else 200
    args.repeats = 1 if quick else 3
    args.concurrency = [1, 8, 32]
    args.fleet = [1000, 10_000] if quick else [1000, 10_000, 100_000]
    args.fleet_allocations = 100 if quick else 200
    args.fleet_allocations_ironic = 10 if quick else 20
    args.ironic_fleet = [1000] if quick else [1000, 5000]
    args.pg_nodes = 500 if quick else 2000
    args.pg_allocations = 200 if quick else 1000
    args.pg_processes = [1, 2, 4]
    args.pg_concurrency = [8, 32]
    args.sections = set(args.only.split(","))
    args.mode = "quick" if quick else "full"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    results: dict[str, Any] = {"machine": machine(), "mode": args.mode,
                               "note": "shared 2-core machine: other "
                               "processes ran meanwhile; see loadavg"}
    workdir = tempfile.mkdtemp(prefix="baremetal-alloc-benchrun-")
    sections: list[tuple[str, Callable[..., dict[str, Any]]]] = [
        ("compare", compare), ("fleet", fleet), ("postgresql", postgresql)]
    try:
        for name, func in sections:
            if name in args.sections:
                results[name] = func(args, workdir)
                rawruns.write_json(args.output, results)  # so far
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results["machine"]["loadavg_end"] = [round(x, 2)
                                         for x in os.getloadavg()]
    rawruns.write_json(args.output, results)
    print(table(results))
    if args.plots:
        from benchmarks import plots  # matplotlib only when plotting

        directory = os.path.splitext(args.output)[0] + "-plots"
        for path in plots.write_all(results, directory):
            log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
