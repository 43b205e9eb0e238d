"""A wait on the change stream beside a polling wait.

One ``serve`` process (SQLite, ``--allocation-delay``: each allocation
settles that long after its create); ``--concurrency`` threads each
create an allocation and wait for it with the SDK, once polling (a
client that never read ``GET /v1``) and once on the stream (a client
that did, so ``wait_for_allocation`` watches).  For each mode: the
``GET``\\ s of the allocation the server answered per wait, and the time
from the allocation settling (its ``updated_at``, the server's clock on
this machine) to the wait returning, p50 and p99.

    .venv/bin/python -m benchmarks.stream_wait --concurrency 1
    .venv/bin/python -m benchmarks.stream_wait --concurrency 100
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import statistics
import threading
import time
import uuid
from typing import Any

from baremetal_allocclient import exceptions
from baremetal_allocclient.tests.fixtures.launcher import ServerProcess
from baremetal_allocclient.v1 import Client
from benchmarks import rawruns


def _wait_one(endpoint: str, stream: bool, rc: str,
              out: list[tuple[str, float]]) -> None:
    with Client.from_endpoint(endpoint) as client:
        if stream:
            client.supports_watch()
        created = client.create_allocation(resource_class=rc)
        with contextlib.suppress(exceptions.AllocationFailed):
            client.wait_for_allocation(created, timeout=120)  # no node
        done = time.time()
        out.append((str(created.uuid), done))


def _mode(server: ServerProcess, stream: bool, count: int
          ) -> dict[str, Any]:
    rc = "none-" + uuid.uuid4().hex[:8]
    out: list[tuple[str, float]] = []
    threads = [threading.Thread(target=_wait_one,
                                args=(server.endpoint, stream, rc, out))
               for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    log = server.log()
    delays, gets = [], []
    for ident, done in out:
        body = server.expect(200, "GET", f"/v1/allocations/{ident}")
        settled = datetime.datetime.fromisoformat(body["updated_at"])
        delays.append(done - settled.timestamp())
        gets.append(log.count(f"GET /v1/allocations/{ident} "))
    delays.sort()
    return {"waits": len(out), "gets_per_wait": statistics.mean(gets),
            "p50_ms": 1000 * statistics.median(delays),
            "p99_ms": 1000 * delays[min(len(delays) - 1,
                                        int(len(delays) * 0.99))]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--delay", type=float, default=3.0,
                        help="--allocation-delay of the server (s)")
    rawruns.add_option(parser, "stream_wait")
    args = parser.parse_args()
    server = ServerProcess()
    try:
        server.start("--allocation-delay", str(args.delay), "--threads",
                     "64", "--workers", "32", schema=True)
        result = {"concurrency": args.concurrency, "delay": args.delay,
                  "polling": _mode(server, False, args.concurrency),
                  "stream": _mode(server, True, args.concurrency)}
    finally:
        server.cleanup()
    print(f"{args.concurrency} concurrent waits, allocations settling "
          f"{args.delay:g} s after their create")
    print(f"{'':10}{'GETs/wait':>10}{'settled->returned p50 ms':>26}"
          f"{'p99 ms':>10}")
    for mode in ("polling", "stream"):
        row = result[mode]
        print(f"{mode:10}{row['gets_per_wait']:>10.1f}"
              f"{row['p50_ms']:>26.1f}{row['p99_ms']:>10.1f}")
    rawruns.write_json(args.output, result)


if __name__ == "__main__":
    main()
