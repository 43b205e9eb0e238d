"""PNG plots of a benchmark result (matplotlib, benchmark-only dependency).

* ``throughput.png``: allocations/s against client concurrency, reference
  server (polling and ``Prefer: wait`` clients) beside real Ironic (same
  run, node count and load generator);
* ``fleet.png``: cost per allocation (mean sequential POST-to-active time)
  against fleet size, log-log, reference server beside Ironic.
"""

from __future__ import annotations

import os
from typing import Any


def write_all(results: dict[str, Any], directory: str) -> list[str]:
    """Write every plot the result has data for; return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    os.makedirs(directory, exist_ok=True)
    written = []
    if "compare" in results:
        written.append(throughput(results, directory))
    if "fleet" in results:
        written.append(fleet(results, directory))
    return written


def _caption(results: dict[str, Any]) -> str:
    m = results["machine"]
    return (f"{m['date_utc'][:10]}, {m['cpus']} CPUs ({m['cpu']}), shared: "
            f"load {m['loadavg_start'][0]}-{m.get('loadavg_end', ['?'])[0]}")


def throughput(results: dict[str, Any], directory: str) -> str:
    import matplotlib.pyplot as plt

    comp = results["compare"]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for name, style, label in (
            ("reference_prefer_wait", "o-",
             "reference, Prefer: wait client (SQLite, 1 process)"),
            ("reference", "o:",
             "reference, polling client (SQLite, 1 process)"),
            ("ironic", "s--", "real Ironic (SQLite, 1 process)")):
        if name not in comp:
            continue
        xs = comp["concurrency"]
        ys = [comp[name][str(c)]["median"]["allocations_per_s"] or 0.001
              for c in xs]
        ax.plot(xs, ys, style, label=label)
    if "postgresql" in results:
        pg = results["postgresql"]
        for procs in sorted((k for k in pg if k.isdigit()), key=int):
            if procs in pg:
                xs = [int(c) for c in pg[procs] if c.isdigit()]
                ys = [pg[procs][str(c)]["median"]["allocations_per_s"]
                      for c in xs]
                ax.plot(xs, ys, "^-.", label=f"reference, Prefer: wait "
                        f"(PostgreSQL, {procs} process"
                        f"{'es' if procs != '1' else ''})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("concurrent clients")
    ax.set_ylabel("allocations / s (active)")
    ax.set_title(f"Throughput, {comp['nodes']} nodes / "
                 f"{comp['nodes']} allocations")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, _caption(results), fontsize=7)
    path = os.path.join(directory, "throughput.png")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def fleet(results: dict[str, Any], directory: str) -> str:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    points = results["fleet"]["points"]
    ax.plot([p["nodes"] for p in points], [p["cost_ms"] for p in points],
            "o-", label="reference (sequential)")
    if all(p.get("c8_cost_ms") for p in points):
        ax.plot([p["nodes"] for p in points],
                [p["c8_cost_ms"] for p in points], "o:",
                label="reference (wall per allocation, 8 clients)")
    comp = results.get("compare", {})
    if "ironic" in comp:
        ironic = [(comp["nodes"], comp["ironic"]["1"]["median"]["mean_ms"])]
        ironic += [(p["nodes"], p["cost_ms"])
                   for p in comp.get("ironic_fleet", [])]
        ax.plot([x for x, _ in ironic], [y for _, y in ironic], "s--",
                label="real Ironic (sequential)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("nodes in the fleet (all matching)")
    ax.set_ylabel("ms per allocation")
    ax.set_title("Cost per allocation against fleet size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, _caption(results), fontsize=7)
    path = os.path.join(directory, "fleet.png")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
