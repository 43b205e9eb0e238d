"""The load generator: one client, identical for every server measured.

Each allocation is ``POST /v1/allocations`` followed by ``GET`` polls of the
allocation on a fixed back-off schedule until it leaves ``allocating``; its
latency is the time from just before the POST to the answer (of the POST or
of a poll) that first showed the final state.  Plain ``requests`` sessions
(one per thread) are used rather than an SDK so that the client costs the
same in front of the reference server and in front of real Ironic.

With ``prefer_wait`` the POST carries ``Prefer: wait=N`` (RFC 7240), as this
project's SDK and CLI send it: the reference server then answers with the
settled allocation and no poll follows; Ironic ignores the header and is
polled exactly as without it.
"""

from __future__ import annotations

import statistics
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import requests

API_VERSION = "1.60"
HEADERS = {"X-OpenStack-Ironic-API-Version": API_VERSION}
#: Pauses between polls of one allocation (the last one repeats).  The same
#: schedule is used for every server, so latency resolution is equal too.
POLL_SCHEDULE: tuple[float, ...] = (0.0, 0.002, 0.005, 0.01, 0.02, 0.05)


@dataclass
class Outcome:
    """What happened to one allocation request."""

    uuid: str | None
    state: str  # active, error, allocating (stuck), http-NNN, exception
    latency: float
    error: str | None = None
    finished: float = 0.0  # perf_counter() when the final state was seen


@dataclass
class RunResult:
    """One batch of allocations at one concurrency."""

    requested: int
    concurrency: int
    wall: float
    started: float = 0.0
    outcomes: list[Outcome] = field(default_factory=list)

    def count(self, state: str) -> int:
        return sum(1 for o in self.outcomes if o.state == state)

    def summary(self) -> dict[str, Any]:
        active = [o.latency for o in self.outcomes if o.state == "active"]
        # Stuck allocations make the wall time the settle timeout; this
        # rate ends when the last allocation that did settle settled.
        settled = [o.finished for o in self.outcomes
                   if o.state in ("active", "error") and o.finished]
        until = (max(settled) - self.started) if settled else 0.0
        states: dict[str, int] = {}
        for o in self.outcomes:
            states[o.state] = states.get(o.state, 0) + 1
        errors = sorted({o.error for o in self.outcomes
                         if o.error and o.state != "active"})[:5]
        return {
            "requested": self.requested,
            "concurrency": self.concurrency,
            "wall_s": round(self.wall, 4),
            "states": states,
            "allocations_per_s": round(len(active) / self.wall, 2)
            if self.wall else 0.0,
            "allocations_per_s_excluding_stuck": round(
                len(active) / until, 2) if until else 0.0,
            "latency_ms": percentiles(active),
            "sample_errors": errors,
        }


def percentiles(values: Sequence[float]) -> dict[str, float | None]:
    """p50/p95/p99/mean in milliseconds (nearest-rank), None when empty."""
    if not values:
        return {"p50": None, "p95": None, "p99": None, "mean": None}
    ordered = sorted(values)

    def rank(p: float) -> float:
        index = max(0, min(len(ordered) - 1,
                           round(p / 100.0 * len(ordered) + 0.5) - 1))
        return round(ordered[index] * 1000.0, 2)

    return {"p50": rank(50), "p95": rank(95), "p99": rank(99),
            "mean": round(statistics.fmean(ordered) * 1000.0, 2)}


class Client:
    """Thread-safe driver of one or more endpoints of the same service."""

    def __init__(self, endpoints: Sequence[str], timeout: float = 60.0,
                 prefer_wait: int = 0):
        self.endpoints = list(endpoints)
        self.timeout = timeout
        self._post_headers = (
            {"Prefer": f"wait={prefer_wait}"} if prefer_wait else {})
        self._local = threading.local()

    def session(self) -> requests.Session:
        session: requests.Session | None = getattr(
            self._local, "session", None)
        if session is None:
            session = requests.Session()
            session.headers.update(HEADERS)
            self._local.session = session
        return session

    def allocate(self, endpoint: str, resource_class: str,
                 settle_timeout: float) -> Outcome:
        """Create one allocation and wait until it is active or failed."""
        session = self.session()
        start = time.perf_counter()
        try:
            response = session.post(
                endpoint + "/v1/allocations",
                json={"resource_class": resource_class,
                      "name": "bench-" + uuid.uuid4().hex[:16]},
                headers=self._post_headers, timeout=self.timeout)
        except requests.RequestException as exc:
            return Outcome(None, "exception", time.perf_counter() - start,
                           type(exc).__name__)
        if response.status_code != 201:
            return Outcome(None, f"http-{response.status_code}",
                           time.perf_counter() - start, response.text[:200])
        body = response.json()
        ident = str(body["uuid"])
        state = str(body["state"])
        deadline = start + settle_timeout
        step = 0
        last_error = body.get("last_error")
        while state == "allocating":
            if time.perf_counter() > deadline:
                return Outcome(ident, "allocating",
                               time.perf_counter() - start, "never settled")
            time.sleep(POLL_SCHEDULE[min(step, len(POLL_SCHEDULE) - 1)])
            step += 1
            try:
                poll = session.get(f"{endpoint}/v1/allocations/{ident}",
                                   timeout=self.timeout)
            except requests.RequestException:
                continue
            if poll.status_code != 200:
                continue
            got = poll.json()
            state = str(got["state"])
            last_error = got.get("last_error")
        now = time.perf_counter()
        return Outcome(ident, state, now - start,
                       last_error if state != "active" else None, now)

    def run(self, count: int, concurrency: int, resource_class: str,
            settle_timeout: float = 60.0) -> RunResult:
        """``count`` allocations with ``concurrency`` client threads.

        Thread ``i`` talks to endpoint ``i % len(endpoints)`` (several
        server processes share one database).
        """
        counter = iter(range(count))
        lock = threading.Lock()
        outcomes: list[Outcome] = []

        def worker(index: int) -> None:
            endpoint = self.endpoints[index % len(self.endpoints)]
            while True:
                with lock:
                    if next(counter, None) is None:
                        return
                outcome = self.allocate(endpoint, resource_class,
                                        settle_timeout)
                with lock:
                    outcomes.append(outcome)

        start = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(i,), daemon=True)
                   for i in range(concurrency)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        result = RunResult(count, concurrency, time.perf_counter() - start,
                           start)
        result.outcomes = outcomes
        return result

    def delete_all(self, uuids: Sequence[str], concurrency: int = 8) -> int:
        """Delete allocations (freeing their nodes); returns failures."""
        endpoint = self.endpoints[0]

        def delete(ident: str) -> bool:
            for _ in range(20):
                try:
                    response = self.session().delete(
                        f"{endpoint}/v1/allocations/{ident}",
                        timeout=self.timeout)
                except requests.RequestException:
                    time.sleep(0.2)
                    continue
                if response.status_code in (204, 404):
                    return True
                time.sleep(0.2)  # Ironic: "database is locked", 409
            return False

        with ThreadPoolExecutor(concurrency) as pool:
            return sum(1 for ok in pool.map(delete, uuids) if not ok)

    def cleanup(self, result: RunResult) -> int:
        """Delete what a run created (stuck ones too)."""
        return self.delete_all([o.uuid for o in result.outcomes
                                if o.uuid is not None])


def repeated(client: Client, count: int, concurrency: int,
             resource_class: str, repeats: int,
             settle_timeout: float = 60.0,
             between: Callable[[], None] | None = None,
             server_cpu: Callable[[], float] | None = None,
             ) -> list[dict[str, Any]]:
    """Run a batch ``repeats`` times, freeing the nodes after each.

    ``server_cpu`` (the server's CPU seconds so far) adds the server's
    CPU time per requested allocation to each run (the freeing is not
    counted).
    """
    runs = []
    for _ in range(repeats):
        before = server_cpu() if server_cpu else 0.0
        result = client.run(count, concurrency, resource_class,
                            settle_timeout)
        summary = result.summary()
        if server_cpu is not None:
            summary["server_cpu_ms_per_allocation"] = round(
                (server_cpu() - before) * 1000 / count, 2)
        runs.append(summary)
        client.cleanup(result)
        if between is not None:
            between()
    return runs


def median_of(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Medians across repeated runs of throughput and latency."""
    def med(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return round(statistics.median(present), 2) if present else None

    return {
        "allocations_per_s": med([r["allocations_per_s"] for r in runs]),
        "allocations_per_s_excluding_stuck": med(
            [r["allocations_per_s_excluding_stuck"] for r in runs]),
        "p50_ms": med([r["latency_ms"]["p50"] for r in runs]),
        "p95_ms": med([r["latency_ms"]["p95"] for r in runs]),
        "p99_ms": med([r["latency_ms"]["p99"] for r in runs]),
        "mean_ms": med([r["latency_ms"]["mean"] for r in runs]),
        "not_active": sum(r["requested"] - r["states"].get("active", 0)
                          for r in runs),
        "server_cpu_ms_per_allocation": med(
            [r.get("server_cpu_ms_per_allocation") for r in runs]),
        "repeats": len(runs),
    }


def timed_gets(url: str, timeout: float, seconds: float,
               count: int | None = None) -> dict[str, Any]:
    """Sequential ``GET url`` (a new connection each) for ``seconds``, or
    until ``count`` were sent: how many, how many failed (a failure
    counts as at least ``timeout``), p50, p99 and the longest, in ms."""
    latencies: list[float] = []
    failures = 0
    until = time.monotonic() + seconds
    while time.monotonic() < until and (
            count is None or len(latencies) < count):
        began = time.perf_counter()
        try:
            ok = requests.get(url, timeout=timeout).ok
        except requests.RequestException:
            ok = False
        elapsed = time.perf_counter() - began
        failures += not ok
        latencies.append(elapsed if ok else max(elapsed, timeout))
    result = percentiles(latencies)
    return {"requests": len(latencies), "failures": failures,
            "p50_ms": result["p50"], "p99_ms": result["p99"],
            "max_ms": round(max(latencies) * 1000, 2) if latencies else None}
