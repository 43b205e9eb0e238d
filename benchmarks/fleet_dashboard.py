"""The picture of the fleet's figures in the docs, from a real Prometheus.

Two ``serve`` processes on one database (PostgreSQL when
``BAREMETAL_ALLOC_TEST_POSTGRESQL_URL`` is set, else SQLite) are
scraped every second by Debian's ``prometheus`` while a scripted
workload runs for ``--minutes``: waves of creates at rising concurrency
(``Prefer: wait``), failures of two kinds (a class with no node, a
trait no node has), a burst that waits in line for capacity, releases,
and a lease that runs out.  Then the first six panels of the Grafana
dashboard (``doc/source/_static/metrics/grafana-dashboard.json``) are
asked of Prometheus, with their own PromQL (``$__rate_interval`` as
15 s), and drawn with matplotlib into
``doc/source/_static/metrics/dashboard.png``.

    .venv/bin/pip install -r benchmarks/requirements.txt
    .venv/bin/python -m benchmarks.fleet_dashboard
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import random
import sys
import tempfile
import time
import uuid
from typing import Any

import requests

from baremetal_allocclient import leases
from baremetal_allocclient.tests.fixtures.peers import started
from baremetal_allocclient.tests.functional.metrics._prometheus import (
    Prometheus,
)
from benchmarks import rawruns, reference

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DASHBOARD = os.path.join(ROOT, "doc", "source", "_static", "metrics",
                         "grafana-dashboard.json")
PICTURE = os.path.join(os.path.dirname(DASHBOARD), "dashboard.png")
RATE = "15s"
RC = "dash-gpu"
NODES = 40
HEADERS = {"X-OpenStack-Ironic-API-Version": "latest", "Prefer": "wait=10"}
QUEUE = {**HEADERS, "X-Baremetal-Alloc-Extensions": "queue"}


def _create(endpoint: str, body: dict[str, Any],
            headers: dict[str, str] = HEADERS) -> dict[str, Any]:
    answer = requests.post(endpoint + "/v1/allocations", json=body,
                           headers=headers, timeout=60)
    answer.raise_for_status()
    return dict(answer.json())


def _delete(endpoint: str, uuid_: str) -> None:
    requests.delete(f"{endpoint}/v1/allocations/{uuid_}", headers=HEADERS,
                    timeout=60)


def workload(endpoints: list[str], seconds: float, rng: random.Random
             ) -> dict[str, int]:
    """Waves of allocations until ``seconds`` have passed: each wave
    creates a few more than the last (a cycle of ten), some of them
    failing; when the class is nearly full, a burst waits in line, one
    lease runs out and half of what is held is released.  Counts."""
    done = {"created": 0, "failed": 0, "queued": 0, "released": 0}
    held: list[tuple[str, str]] = []
    ends = time.monotonic() + seconds
    wave = 0
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        while time.monotonic() < ends:
            wave += 1
            bodies: list[dict[str, Any]] = [
                {"resource_class": RC} for _ in range(2 + wave % 10)]
            if wave % 3 == 0:
                bodies.append({"resource_class": RC,
                               "traits": ["CUSTOM_NOBODY_HAS_IT"]})
            if wave % 4 == 0:
                bodies.append({"resource_class": "no-such-class"})
            chosen = [endpoints[rng.randrange(2)] for _ in bodies]
            made = list(pool.map(_create, chosen, bodies))
            for endpoint, one in zip(chosen, made, strict=True):
                if one["state"] == "error":
                    done["failed"] += 1
                else:
                    held.append((endpoint, one["uuid"]))
                    done["created"] += 1
            if len(held) >= NODES - 8:
                for _ in range(6):  # no node free soon: they wait
                    one = _create(endpoints[0], {"resource_class": RC,
                                                 "queue": {"timeout": 120}},
                                  QUEUE)
                    held.append((endpoints[0], one["uuid"]))
                    done["queued"] += 1
                time.sleep(2)
                rng.shuffle(held)
                endpoint, lease_uuid = held.pop()  # its lease runs out
                requests.patch(
                    f"{endpoint}/v1/allocations/{lease_uuid}",
                    headers=HEADERS, timeout=60, json=[{
                        "op": "add", "path": "/extra/" + leases.EXPIRES_KEY
                        .replace("~", "~0").replace("/", "~1"),
                        "value": leases.format_timestamp(
                            datetime.datetime.now(datetime.timezone.utc))}])
                half = len(held) // 2
                list(pool.map(lambda pair: _delete(*pair), held[:half]))
                done["released"] += half
                held = held[half:]
            time.sleep(rng.uniform(0.3, 1.0))
    return done


def draw(prometheus: Prometheus, began: float, ended: float,
         path: str) -> list[dict[str, Any]]:
    """The dashboard's first six panels as one picture; their data."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(DASHBOARD, encoding="utf-8") as source:
        panels = json.load(source)["panels"][:6]
    figure, axes = plt.subplots(2, 3, figsize=(15, 7.5), sharex=True)
    kept = []
    for axis, panel in zip(axes.flat, panels, strict=True):
        for target in panel["targets"]:
            expr = target["expr"].replace("$__rate_interval", RATE)
            series = prometheus.query_range(expr, began, ended, 2)
            kept.append({"panel": panel["title"], "expr": expr,
                         "series": series})
            for one in series:
                times = [float(t) - began for t, _v in one["values"]]
                values = [float(v) for _t, v in one["values"]]
                legend = target["legendFormat"]
                for key, value in one["metric"].items():
                    legend = legend.replace("{{" + key + "}}", value)
                axis.plot(times, values, label=legend)
        axis.set_title(panel["title"], fontsize=9)
        axis.legend(fontsize=7, loc="upper left")
        axis.grid(alpha=0.3)
    for axis in axes[1]:
        axis.set_xlabel("seconds into the workload")
    figure.suptitle("baremetal-alloc-server: two processes, one database, "
                    "scraped by Prometheus every second", fontsize=11)
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    return kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--picture", default=PICTURE)
    rawruns.add_option(parser, "fleet-dashboard")
    args = parser.parse_args(argv)
    rng = random.Random(52)
    with tempfile.TemporaryDirectory() as tmp:
        url = os.environ.get(reference.PG_URL_ENV)
        context = (reference.postgresql_database() if url else None)
        db = context.__enter__() if context else \
            "sqlite:///" + os.path.join(tmp, "dashboard.sqlite")
        try:
            reference.server("db", "upgrade", "--db", db)
            reference.enroll(db, NODES, RC, tmp)
            servers = [reference.start(db, f"dash-{i}-{uuid.uuid4().hex[:4]}",
                                       extra=("--expire-leases", "1"))
                       for i in range(2)]
            prometheus = started(Prometheus(
                [s.endpoint.split("//")[1] for s in servers]))
            try:
                began = time.time()
                done = workload([s.endpoint for s in servers],
                                args.minutes * 60, rng)
                time.sleep(5)
                ended = time.time()
                data = draw(prometheus, began, ended, args.picture)
            finally:
                prometheus.close()
                for server in servers:
                    server.stop()
        finally:
            if context:
                context.__exit__(None, None, None)
    print(f"workload: {done}; picture: {args.picture}")
    rawruns.write_json(args.output, {"workload": done, "panels": data})
    return 0


if __name__ == "__main__":
    sys.exit(main())
