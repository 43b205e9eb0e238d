"""Allocations through the broker beside allocations made directly on
the real Ironic it fronts: allocations per second, and requests that
reach Ironic per allocation, at 1, 8 and 32 clients, in one run.

One real Ironic 39 (fake-hardware; on MariaDB when
``BAREMETAL_ALLOC_TEST_MYSQL_URL`` is set, as in CI, else SQLite) and
one reference server in front of it (``--backend ironic``), started as
the tests start them.  ``--nodes`` nodes are enrolled once (through the
server).  At each client count, each client runs cycles of one
allocation: through the server, ``POST`` with ``Prefer: wait=30`` (one
request) then ``DELETE``; directly, ``POST``, ``GET`` every
``--poll`` seconds until it settles (what every Ironic client does),
then ``DELETE``.  The requests that reached Ironic are counted from
Ironic's own access log.

    .venv/bin/python -m benchmarks.broker
    .venv/bin/python -m benchmarks.broker --clients 1 8 --cycles 24
"""

from __future__ import annotations

import argparse
import concurrent.futures
import re
import sys
import time
import uuid
from typing import Any

import requests

from baremetal_allocclient.tests.functional import targets
from benchmarks import rawruns

_VERSION = {"X-OpenStack-Ironic-API-Version": "1.82"}
_ACCESS = re.compile(r"ironic\.api .* - (GET|POST|PATCH|PUT|DELETE) ")


def ironic_requests(broker: targets.Target) -> int:
    """Requests Ironic has answered so far (its access log)."""
    peer = broker._peer
    assert peer is not None
    return len(_ACCESS.findall(peer.log()))


def through_server(endpoint: str, rc: str) -> bool:
    """One cycle through the broker; whether it got a node."""
    with requests.Session() as http:
        created = http.post(f"{endpoint}/v1/allocations",
                            json={"resource_class": rc},
                            headers={**_VERSION, "Prefer": "wait=30"},
                            timeout=60).json()
        http.delete(f"{endpoint}/v1/allocations/{created['uuid']}",
                    headers=_VERSION, timeout=60)
        return bool(created.get("state") == "active")


def direct(endpoint: str, rc: str, poll: float) -> bool:
    """One cycle on Ironic itself, polling as its clients do."""
    with requests.Session() as http:
        uuid_ = str(uuid.uuid4())
        http.post(f"{endpoint}/v1/allocations",
                  json={"uuid": uuid_, "resource_class": rc},
                  headers=_VERSION, timeout=60)
        state = "allocating"
        deadline = time.monotonic() + 60
        while state == "allocating" and time.monotonic() < deadline:
            time.sleep(poll)
            state = http.get(f"{endpoint}/v1/allocations/{uuid_}",
                             headers=_VERSION, timeout=60).json()["state"]
        http.delete(f"{endpoint}/v1/allocations/{uuid_}", headers=_VERSION,
                    timeout=60)
        return state == "active"


def measure(broker: targets.Target, label: str, cycle: Any,
            clients: int, cycles: int) -> dict[str, Any]:
    """``cycles`` cycles shared by ``clients`` threads."""
    before = ironic_requests(broker)
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(lambda _i: cycle(), range(cycles)))
    seconds = time.perf_counter() - started
    time.sleep(1.5)  # Ironic's log lines of the last requests
    sent = ironic_requests(broker) - before
    row = {"path": label, "clients": clients, "cycles": cycles,
           "active": sum(results), "seconds": round(seconds, 2),
           "allocations_per_s": round(sum(results) / seconds, 2),
           "ironic_requests_per_allocation": round(sent / cycles, 2)}
    print(f"{label:7} {clients:3} clients: {row['allocations_per_s']:6.2f} "
          f"allocations/s, {row['ironic_requests_per_allocation']:5.2f} "
          f"Ironic requests per allocation ({row['active']}/{cycles} "
          f"active)", flush=True)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+",
                        default=[1, 8, 32])
    parser.add_argument("--cycles", type=int, default=64,
                        help="allocations per client count and path "
                             "(default %(default)s)")
    parser.add_argument("--nodes", type=int, default=32)
    parser.add_argument("--poll", type=float, default=0.5,
                        help="direct clients' polling interval (default "
                             "%(default)s s)")
    rawruns.add_option(parser, "broker")
    args = parser.parse_args(argv)
    broker = targets.start_broker("--ironic-sync-interval", "10")
    try:
        rc = targets.unique("rc")
        broker.make_nodes(args.nodes, rc, name_prefix=targets.unique("n"))
        peer = broker._peer
        assert peer is not None
        rows = []
        for clients in args.clients:
            rows.append(measure(broker, "server",
                                lambda: through_server(broker.endpoint, rc),
                                clients, args.cycles))
            rows.append(measure(broker, "direct",
                                lambda: direct(peer.endpoint, rc, args.poll),
                                clients, args.cycles))
    finally:
        broker.stop()
    rawruns.write_json(args.output, {"nodes": args.nodes,
                                     "poll": args.poll, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
