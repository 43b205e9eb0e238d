"""What the metrics cost: allocations per second with ``GET /metrics``
scraped every second beside no scrape, on one ``serve`` process.

The server records its counters and histograms on every request either
way (they are always on); a scrape adds the exposition and, at most
every 5 s, the fleet's read (three grouped queries).  Rounds alternate,
scraped and not, ``--rounds`` times each: each round is a batch of
``--count`` allocations (``Prefer: wait``) at ``--concurrency``
clients, through :mod:`benchmarks.load`, the nodes freed between
rounds.  The figure is the median rate of each side and their ratio;
the goal is under 5 % lower with the scrape.

    .venv/bin/python -m benchmarks.metrics_cost
    .venv/bin/python -m benchmarks.metrics_cost --db postgresql
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

import requests

from benchmarks import floor, load, rawruns, reference

RC = "bench-metrics"


class Scraper:
    """GET /metrics every ``interval`` s in a thread, while running."""

    def __init__(self, endpoint: str, interval: float = 1.0) -> None:
        self.endpoint = endpoint
        self.interval = interval
        self.scrapes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        session = requests.Session()
        while True:  # at once, then every interval
            answer = session.get(self.endpoint + "/metrics", timeout=10)
            assert answer.status_code == 200, answer.text[:200]
            self.scrapes += 1
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> Scraper:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()


def measure(db: str, args: argparse.Namespace) -> dict[str, Any]:
    """Alternating rounds against one server on ``db``."""
    target = reference.start(db, "metrics-bench")
    try:
        client = load.Client([target.endpoint], prefer_wait=10)
        load.repeated(client, args.count, args.concurrency, RC, 1)  # warm
        rates: dict[str, list[float]] = {"none": [], "scraped": []}
        scrapes = 0
        for _ in range(args.rounds):
            for side in ("none", "scraped"):
                if side == "scraped":
                    with Scraper(target.endpoint) as scraper:
                        run = load.repeated(client, args.count,
                                            args.concurrency, RC, 1)[0]
                    scrapes += scraper.scrapes
                else:
                    run = load.repeated(client, args.count,
                                        args.concurrency, RC, 1)[0]
                assert run["states"] == {"active": args.count}, run
                rates[side].append(run["allocations_per_s"])
        scrape_ms = scrape_cpu(target.endpoint, target.pid)
    finally:
        target.stop()
    medians = {side: statistics.median(values)
               for side, values in rates.items()}
    return {"rates": rates, "median": medians, "scrapes": scrapes,
            "ratio": medians["scraped"] / medians["none"],
            "scrape_cpu_ms": scrape_ms}


def scrape_cpu(endpoint: str, pid: int, count: int = 30) -> float:
    """The server's CPU per scrape, in ms: ``count`` scrapes a second
    apart on an otherwise idle server (one in five with the fleet's
    read), less what it spends idle as long."""
    session = requests.Session()
    idle_from = floor.cpu_seconds(pid)
    began = time.monotonic()
    time.sleep(5)
    idle = (floor.cpu_seconds(pid) - idle_from) / (time.monotonic() - began)
    cpu_from, began = floor.cpu_seconds(pid), time.monotonic()
    for _ in range(count):
        answer = session.get(endpoint + "/metrics", timeout=10)
        assert answer.status_code == 200, answer.text[:200]
        time.sleep(1)
    spent = floor.cpu_seconds(pid) - cpu_from
    spent -= idle * (time.monotonic() - began)
    return spent * 1000 / count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=("sqlite", "postgresql"),
                        default="sqlite")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    rawruns.add_option(parser, "metrics-cost")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.db == "sqlite":
            url = "sqlite:///" + os.path.join(tmp, "metrics.sqlite")
            result = _run(url, tmp, args)
        else:
            with reference.postgresql_database() as url:
                result = _run(url, tmp, args)
    result.update(db=args.db, count=args.count,
                  concurrency=args.concurrency, load=os.getloadavg())
    print(f"{args.db}: {result['median']['none']:.0f} allocations/s "
          f"without a scrape, {result['median']['scraped']:.0f} with one "
          f"every second ({result['scrapes']} scrapes): "
          f"{result['ratio']:.3f}x (medians of {args.rounds} rounds of "
          f"{args.count} at {args.concurrency} clients); the server's "
          f"CPU per scrape {result['scrape_cpu_ms']:.2f} ms")
    rawruns.write_json(args.output, result)
    return 0


def _run(url: str, tmp: str, args: argparse.Namespace) -> dict[str, Any]:
    reference.server("db", "upgrade", "--db", url)
    reference.enroll(url, args.count, RC, tmp)
    return measure(url, args)


if __name__ == "__main__":
    sys.exit(main())
