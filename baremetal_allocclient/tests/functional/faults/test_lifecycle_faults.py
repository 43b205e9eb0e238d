"""Groups, waiting in line and leases under interleavings.

Each scenario starts two ``serve`` processes on one database and makes
the lifecycle operations overlap: a DELETE of an allocation waiting in
line against the release of the node it would get, two processes
serving one line while nodes are released, lease expiry against a
renewal and a DELETE, a group against single and queued allocations.
Besides the invariants of :mod:`._invariants` (a waiting allocation
holds no node, groups are whole, an allocation released on lease expiry
leaves its node free), each checks what the answers promised.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Sequence
from typing import Any

from baremetal_allocclient import leases
from baremetal_allocclient.tests.functional.faults import (
    _harness,
    _invariants,
)
from baremetal_allocclient.tests.functional.multiprocess import _cluster

FAST = _cluster.FAST
QUEUE = {"X-Baremetal-Alloc-Extensions": "queue"}
GROUPS = {"X-Baremetal-Alloc-Extensions": "groups"}
RELEASED = "Lease of allocation "
#: ``serve --expire-leases`` interval of the lease scenario.
EXPIRY_INTERVAL = 0.2


def expiry_releases(servers: Sequence[Any]) -> list[tuple[str, str]]:
    """(allocation UUID, node UUID) of every release on lease expiry the
    servers logged (one entry per log line, so twice means twice)."""
    found = []
    for server in servers:
        for line in server.log().splitlines():
            if RELEASED in line and ": released node " in line:
                allocation = line.split(RELEASED, 1)[1].split(" ", 1)[0]
                node = line.split(": released node ", 1)[1].split()[0]
                found.append((allocation, node))
    return found


class _Lifecycle:
    scenario: _harness.Scenario
    start_server: Any
    enroll: Any
    rc: Any
    assert_no_violations: Any

    # -- helpers ---------------------------------------------------------
    def create(self, server: Any, rc: str, queue: float | None = None,
               **body: Any) -> str | None:
        """POST an allocation (waiting in line up to ``queue`` seconds);
        its UUID, or None when not created."""
        body["resource_class"] = rc
        headers = None
        if queue is not None:
            body["queue"] = {"timeout": queue}
            headers = QUEUE
        resp = self.scenario.request(server, "POST", "/v1/allocations",
                                     body, headers=headers)
        if resp is None or resp.status_code != 201:
            return None
        return str(resp.json()["uuid"])

    def hold(self, server: Any, rc: str) -> str:
        """An ``active`` allocation of ``rc``."""
        uuid = self.create(server, rc)
        assert uuid is not None, f"could not create in {rc}"
        state = server.wait_allocation(uuid)["state"]
        assert state == "active", f"{uuid} is {state}"
        return uuid

    def delete(self, server: Any, uuid: str) -> int | None:
        resp = self.scenario.request(server, "DELETE",
                                     f"/v1/allocations/{uuid}")
        return None if resp is None else resp.status_code

    def state(self, uuid: str) -> str | None:
        row = self.scenario.snapshot().by_uuid(uuid)
        return None if row is None else row.state

    def wait_for(self, what: str, done: Callable[[], bool],
                 timeout: float = 20) -> bool:
        """Poll ``done`` (bounded); a violation when it never holds."""
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                self.scenario.violation(f"{what} within {timeout:g} s")
                return False
            time.sleep(0.1)
        return True

    def later(self, delay: float, call: Callable[[], Any]
              ) -> Callable[[], Any]:
        def run() -> Any:
            time.sleep(delay)
            return call()
        return run

    # -- scenarios -------------------------------------------------------
    def test_delete_of_waiting_races_release_of_its_node(self) -> None:
        """One node per line, held; two allocations wait for it.  The
        first waiting one is deleted while the holder is released (other
        process): the node goes to the second, never to the deleted one,
        and is never left free with the second still waiting."""
        s = self.scenario
        servers = [self.start_server(*FAST, "--queue-interval", "0.3")
                   for _ in range(2)]
        lines = _harness.rounds(3, 12)
        nodes = self.enroll({f"{s.prefix}-n{i}": {"resource_class":
                                                  self.rc(f"q{i}")}
                             for i in range(lines)})
        held, first, second = [], [], []
        for i in range(lines):
            held.append(self.hold(servers[i % 2], self.rc(f"q{i}")))
            for waiting in (first, second):
                uuid = self.create(servers[(i + 1) % 2], self.rc(f"q{i}"),
                                   queue=30)
                assert uuid is not None
                waiting.append(uuid)
        s.check_now()
        calls = []
        for i in range(lines):
            a, b = s.rng.sample(servers, 2)
            calls.append(self.later(s.rng.uniform(0, 0.05), lambda a=a, i=i:
                                    self.delete(a, first[i])))
            calls.append(self.later(s.rng.uniform(0, 0.05), lambda b=b, i=i:
                                    self.delete(b, held[i])))
        s.fault(f"{lines} DELETEs of waiting allocations racing the "
                f"release of the node they wait for")
        answers = s.together(calls)

        def claims(snap: _invariants.Snapshot) -> list[str]:
            found = []
            ids = {n.uuid: n.id for n in snap.nodes.values()}
            for i in range(lines):
                node = snap.nodes.get(ids.get(nodes[f"{s.prefix}-n{i}"], -1))
                for gone, status in ((first[i], answers[2 * i]),
                                     (held[i], answers[2 * i + 1])):
                    if status != 204:
                        found.append(f"DELETE {gone} answered {status}")
                    if snap.by_uuid(gone) is not None:
                        found.append(f"{gone} was deleted but is stored")
                row = snap.by_uuid(second[i])
                if row is None or row.state != "active" or (
                        node is None or row.node_id != node.id):
                    found.append(
                        f"second in line {second[i]} did not get node "
                        f"{nodes[f'{s.prefix}-n{i}']}: "
                        f"{row.state if row else 'gone'}")
            return found

        s.settle_and_check(timeout=30, claims=claims)
        self.assert_no_violations()

    def test_two_processes_serve_one_line_while_nodes_are_released(
            self) -> None:
        """8 allocations wait (created alternately through two processes)
        for 4 held nodes; the holders are released at once through both
        processes, then the first served: each time the earliest waiting
        ones get the nodes, whichever process owns them."""
        s = self.scenario
        servers = [self.start_server(*FAST, "--queue-interval", "0.3")
                   for _ in range(2)]
        size = 4
        self.enroll({f"{s.prefix}-n{i}": {"resource_class": self.rc()}
                     for i in range(size)})
        holders = [self.hold(servers[i % 2], self.rc()) for i in range(size)]
        line = []
        for i in range(_harness.rounds(2, 4) * size):
            uuid = self.create(servers[i % 2], self.rc(), queue=60)
            assert uuid is not None
            line.append(uuid)
        s.check_now()
        while line:
            served, line = line[:size], line[size:]
            calls = [self.later(s.rng.uniform(0, 0.05),
                                lambda u=u: self.delete(
                                    s.rng.choice(servers), u))
                     for u in holders]
            s.fault(f"release {len(holders)} nodes at once with "
                    f"{len(served) + len(line)} waiting")
            s.together(calls)
            self.wait_for(
                f"the first {size} in line active",
                lambda served=served: all(self.state(u) == "active"
                                          for u in served))
            snap = s.snapshot()
            for uuid in line:
                row = snap.by_uuid(uuid)
                if row is None or row.state != "allocating":
                    s.violation(f"{uuid}, later in line, is "
                                f"{row.state if row else 'gone'} while "
                                f"earlier ones were served")
            s.check_now()
            holders = served
        for uuid in holders:
            self.delete(servers[0], uuid)
        s.settle_and_check(timeout=30)
        self.assert_no_violations()

    def test_lease_expiry_races_renew_and_delete(self) -> None:
        """Leases end on one second, on two processes expiring every
        0.2 s; around that second some are renewed, some deleted, some
        both, some left to expire, with two more allocations waiting in
        line for the nodes.  A renewal answered 200 keeps the allocation;
        each one is released once (by expiry or by its DELETE, never
        both); a node released by expiry is free or went to the line."""
        s = self.scenario
        servers = [self.start_server(*FAST, "--queue-interval", "0.3",
                                     "--expire-leases", str(EXPIRY_INTERVAL))
                   for _ in range(2)]
        count = _harness.rounds(8, 24)
        self.enroll({f"{s.prefix}-n{i}": {"resource_class": self.rc()}
                     for i in range(count)})
        made = [self.hold(servers[i % 2], self.rc()) for i in range(count)]
        end = (datetime.datetime.now(datetime.UTC).replace(microsecond=0)
               + datetime.timedelta(seconds=3))
        for uuid in made:
            self.patch_lease(servers[0], uuid, end, "3s")
        line = [self.create(servers[i], self.rc(), queue=30)
                for i in range(2)]
        actions = ["expire", "expire"] + [
            s.rng.choice(("renew", "delete", "both", "expire"))
            for _ in range(count - 2)]
        s.rng.shuffle(actions)
        answers: dict[str, dict[str, int | None]] = {u: {} for u in made}
        far = end + datetime.timedelta(hours=1)
        start = end.timestamp() - time.time()

        def act(uuid: str, action: str) -> Callable[[], Any]:
            def run() -> None:
                time.sleep(max(0.0, start + s.rng.uniform(-0.4, 0.4)))
                if action in ("renew", "both"):
                    answers[uuid]["renew"] = self.patch_lease(
                        s.rng.choice(servers), uuid, far, "1h")
                if action in ("delete", "both"):
                    answers[uuid]["delete"] = self.delete(
                        s.rng.choice(servers), uuid)
            return run

        s.fault(f"{count} leases ending at {end:%H:%M:%S}: "
                f"{', '.join(actions)}")
        s.together([act(u, a) for u, a in zip(made, actions, strict=True)])
        expiring = [u for u, a in zip(made, actions, strict=True)
                    if a == "expire"]
        self.wait_for("every lease left alone released",
                      lambda: all(s.snapshot().by_uuid(u) is None
                                  for u in expiring), timeout=15)
        released: dict[str, str] = {}

        def claims(snap: _invariants.Snapshot) -> list[str]:
            found = []
            logged = expiry_releases(servers)
            released.update(logged)
            for uuid in sorted({u for u, _ in logged}):
                times = sum(1 for u, _ in logged if u == uuid)
                if times != 1:
                    found.append(f"{uuid} released on expiry {times} times")
            for uuid in made:
                got = answers[uuid]
                stored = snap.by_uuid(uuid) is not None
                if got.get("renew") == 200 and "delete" not in got and (
                        not stored or uuid in released):
                    found.append(f"{uuid} was renewed (200) but released")
                if got.get("delete") == 204 and uuid in released:
                    found.append(f"{uuid} was deleted (204) and released "
                                 f"on expiry")
                if got.get("renew") == 404 and uuid not in released and (
                        got.get("delete") != 204):
                    found.append(f"renewal of {uuid} answered 404 but "
                                 f"nothing released it")
                if got.get("delete") == 404 and uuid not in released:
                    found.append(f"DELETE {uuid} answered 404 but expiry "
                                 f"did not release it")
                if stored and got.get("renew") != 200:
                    found.append(f"{uuid}'s lease ended unrenewed but it is "
                                 f"still stored")
            for uuid in line:
                row = snap.by_uuid(uuid) if uuid else None
                if row is None or row.state != "active":
                    found.append(f"{uuid}, waiting in line, did not get a "
                                 f"node released on expiry")
            return found + _invariants.released_by_expiry_left_free(
                snap, released)

        s.settle_and_check(timeout=30, claims=claims)
        self.assert_no_violations()

    def patch_lease(self, server: Any, uuid: str,
                    end: datetime.datetime, duration: str) -> int | None:
        """Write the lease keys with a JSON patch (what ``renew`` does)."""
        patch = [{"op": "add", "path": f"/extra/{key}", "value": value}
                 for key, value in (
                     (leases.EXPIRES_KEY, end.strftime("%Y-%m-%dT%H:%M:%SZ")),
                     (leases.DURATION_KEY, duration))]
        resp = self.scenario.request(server, "PATCH",
                                     f"/v1/allocations/{uuid}", patch)
        return None if resp is None else resp.status_code

    def test_group_races_single_and_queued_allocations(self) -> None:
        """Two groups, single creates, creates waiting in line and the
        release of held nodes, at once through two processes: a group is
        all of its members active or none stored; no node twice."""
        s = self.scenario
        servers = [self.start_server(*FAST, "--queue-interval", "0.3")
                   for _ in range(2)]
        self.enroll({f"{s.prefix}-n{i}": {"resource_class": self.rc()}
                     for i in range(6)})
        for round_ in range(_harness.rounds(2, 10)):
            held = [self.hold(servers[i], self.rc()) for i in range(2)]
            groups = {f"{s.prefix}-g{round_}-{size}": size
                      for size in (4, 3)}
            calls: list[Callable[[], Any]] = [
                self.later(s.rng.uniform(0, 0.05), lambda n=n, c=c:
                           s.request(s.rng.choice(servers), "POST",
                                     "/v1/allocation_groups",
                                     {"count": c, "resource_class": self.rc(),
                                      "name": n}, headers=GROUPS))
                for n, c in groups.items()]
            calls += [self.later(s.rng.uniform(0, 0.05), lambda q=q:
                                 self.create(s.rng.choice(servers), self.rc(),
                                             queue=q))
                      for q in (None, None, 3, 3)]
            calls += [self.later(s.rng.uniform(0, 0.05), lambda u=u:
                                 self.delete(s.rng.choice(servers), u))
                      for u in held]
            s.fault(f"round {round_}: 2 groups, 2 singles, 2 waiting, "
                    f"2 releases")
            answers = s.together(calls)

            def claims(snap: _invariants.Snapshot,
                       answers: list[Any] = answers,
                       groups: dict[str, int] = groups) -> list[str]:
                found = []
                for (name, size), resp in zip(groups.items(), answers,
                                              strict=False):
                    members = [a for a in snap.allocations.values()
                               if _invariants.group_name(a) == name]
                    status = None if resp is None else resp.status_code
                    if status == 201 and (len(members) != size or any(
                            a.state != "active" for a in members)):
                        found.append(f"group {name} answered 201 but "
                                     f"{len(members)} of {size} are stored")
                    if status != 201 and members:
                        found.append(f"group {name} answered {status} but "
                                     f"{len(members)} members are stored")
                return found

            snap = s.settle_and_check(timeout=30, claims=claims)
            calls = [lambda u=a.uuid: self.delete(s.rng.choice(servers), u)
                     for a in snap.allocations.values()]
            s.together(calls)
        s.settle_and_check(timeout=30)
        self.assert_no_violations()


_harness.classes_for(_Lifecycle, globals())
