"""Child process: list every allocation through the SDK iterator.

Run as ``python -m benchmarks.list_client ENDPOINT [PAGE_SIZE]``; prints one
JSON line with the count, the time taken, the client's RSS sampled along the
way and its peak RSS.  A separate process, so the numbers are the SDK's
alone (nothing of the harness is in memory).
"""

from __future__ import annotations

import json
import resource
import sys
import time

import psutil  # type: ignore[import-untyped]

from baremetal_allocclient.v1 import Client


def main(argv: list[str]) -> int:
    endpoint = argv[0]
    page_size = int(argv[1]) if len(argv) > 1 else None
    me = psutil.Process()
    client = Client.from_endpoint(endpoint)
    start = time.perf_counter()
    samples: list[tuple[int, float]] = []
    count = 0
    for _allocation in client.list_allocations(page_size=page_size):
        count += 1
        if count % 10_000 == 0:
            samples.append((count, round(me.memory_info().rss / 2**20, 1)))
    elapsed = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({
        "count": count,
        "seconds": round(elapsed, 2),
        "items_per_s": round(count / elapsed, 1) if elapsed else None,
        "rss_mib_at": samples,
        "peak_rss_mib": round(peak_kib / 1024, 1),
        "page_size": page_size,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
