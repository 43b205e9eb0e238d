"""``serve --expire-leases`` with two processes on one database.

Both processes expire leases every second.  Each expired allocation must
be released within one expiry period of its lease's end, by exactly one of
them (each release is one log line), its node freed, and a lease renewed
before it ended must survive.
"""

from __future__ import annotations

import sys
import time

import requests
import testtools

from baremetal_allocclient import leases
from baremetal_allocclient.tests.fixtures.launcher import (
    ServerProcess,
)
from baremetal_allocclient.tests.functional.multiprocess import (
    _cluster,
)
from baremetal_allocclient.v1 import Client

INTERVAL = 1.0
LEASED = 8
#: The test's polling and a loaded, shared 2-core machine.
SLACK = 4.0
RELEASED = "Lease of allocation "


def releases_in_logs(servers: dict[str, ServerProcess]
                     ) -> dict[str, list[str]]:
    """Allocation UUID -> the processes whose log says they released it."""
    seen: dict[str, list[str]] = {}
    for name, server in servers.items():
        for line in server.log().splitlines():
            if RELEASED in line and ": released node " in line:
                allocation = line.split(RELEASED, 1)[1].split(" ", 1)[0]
                seen.setdefault(allocation, []).append(name)
    return seen


class _LeaseExpiryTests(_cluster.ClusterCase):
    """Mixin; ``kind`` is set by the concrete classes."""

    def setUp(self) -> None:
        super().setUp()
        _cluster.enroll(self.db.url, self.workdir, LEASED + 1, self.rc)
        self.servers = {}
        for name in ("a", "b"):
            server = _cluster.start(self.db.url, f"{self.prefix}-{name}",
                                    "--expire-leases", str(INTERVAL))
            self.case.addCleanup(server.cleanup)
            self.servers[name] = server

    def test_expired_leases_are_released_once_within_a_period(self) -> None:
        first = self.servers["a"]
        client = Client.from_endpoint(first.endpoint)
        self.case.addCleanup(client.close)
        advertised = requests.get(first.endpoint + "/v1", timeout=30
                                  ).json()["extensions"][leases.EXTENSION]
        self.case.assertEqual((True, INTERVAL),
                              (advertised["expiring"],
                               advertised["interval"]))
        made = [client.allocate(self.rc, lease="2s", timeout=60)
                for _ in range(LEASED)]
        kept = client.allocate(self.rc, lease="2s", timeout=60)
        client.renew_lease(kept, "1h")  # before it ends
        ends = {str(a.uuid): leases.expires_at(a.marks) for a in made}

        released_at: dict[str, float] = {}
        deadline = time.monotonic() + 2 + INTERVAL + SLACK + 5
        while len(released_at) < LEASED and time.monotonic() < deadline:
            listed = {a["uuid"] for a in _cluster.allocations(first,
                                                             self.rc)}
            for gone in set(ends) - listed - set(released_at):
                released_at[gone] = time.time()
            time.sleep(0.1)
        self.case.assertEqual(sorted(ends), sorted(released_at))
        late = {u: released_at[u] - ends[u].timestamp()  # type: ignore[union-attr]
                for u in ends}
        print(f"\n{self.kind}: {LEASED} leases released "
              f"{min(late.values()):.1f}-{max(late.values()):.1f} s after "
              f"their end (expiry every {INTERVAL:g} s, two processes)",
              file=sys.stderr)
        self.case.assertLess(max(late.values()), INTERVAL + SLACK)

        # Exactly once: one release line per allocation over both logs.
        released = releases_in_logs(self.servers)
        self.case.assertEqual(sorted(ends), sorted(released))
        self.case.assertEqual(
            [], [u for u, who in released.items() if len(who) != 1])
        # Invariants: the renewed one holds its node; every other node is
        # free, and no node is held twice.
        remaining = _cluster.allocations(first, self.rc)
        self.case.assertEqual([str(kept.uuid)],
                              [a["uuid"] for a in remaining])
        holders = [n["allocation_uuid"] for n in _cluster.nodes(first,
                                                                self.rc)]
        self.case.assertEqual(sorted([str(kept.uuid)] + [None] * LEASED,
                                     key=str), sorted(holders, key=str))
        for server in self.servers.values():
            self.case.assertNotIn("Traceback", server.log())


class SQLiteLeaseExpiryTests(_LeaseExpiryTests, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLLeaseExpiryTests(_LeaseExpiryTests, testtools.TestCase):
    kind = "postgresql"


class MySQLLeaseExpiryTests(_LeaseExpiryTests, testtools.TestCase):
    kind = "mysql"
