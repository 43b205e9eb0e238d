"""The database cut and restored (a loopback TCP proxy) during creates,
deletes and take-over.

PostgreSQL and MariaDB only: the server reaches them through
:class:`..multiprocess._proxy.TcpProxy`; SQLite is a local file with no
connection to cut (those classes skip).  The promise checked besides the
invariants: a 503 changed nothing, a 201/204 did what it says.
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

from baremetal_allocclient.tests.functional.faults import _harness
from baremetal_allocclient.tests.functional.multiprocess import _cluster

FAST = _cluster.FAST
HEARTBEAT_TIMEOUT = 3.0


class _Outages:
    scenario: _harness.Scenario
    start_server: Any
    enroll: Any
    rc: Any
    proxied_db: Any
    assert_no_violations: Any

    def test_cut_during_creates(self) -> None:
        """Clients keep creating while the database is cut for 1.5 s:
        every 201 is stored, every 503 stored nothing."""
        s = self.scenario
        proxy, url = self.proxied_db()
        server = self.start_server(*FAST, "--allocation-delay", "0.2",
                                   db_url=url)
        self.enroll({f"{s.prefix}-n{i}": {"resource_class": self.rc()}
                     for i in range(40)})
        answers: list[tuple[int | None, str]] = []
        stop = threading.Event()

        def client(index: int) -> None:
            sequence = 0
            while not stop.is_set() and sequence < 30:
                tag = f"{index}-{sequence}"
                resp = s.request(server, "POST", "/v1/allocations",
                                 {"resource_class": self.rc(),
                                  "extra": {"tag": tag}}, outage=True,
                                 timeout=30)
                answers.append((None if resp is None else resp.status_code,
                                tag))
                sequence += 1
                time.sleep(0.1)

        threads = [threading.Thread(target=client, args=(i,))
                   for i in range(3)]
        for thread in threads:
            thread.start()
        for _ in range(_harness.rounds(1, 4)):
            time.sleep(s.rng.uniform(0.3, 1.0))
            s.fault("database cut for 1.5 s")
            proxy.cut_for(1.5)
            proxy.wait_restored()
        time.sleep(0.5)
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
        snap = s.settle_and_check(timeout=60)
        stored = {a.extra.get("tag") for a in snap.allocations.values()}
        for status, tag in answers:
            if status == 201 and tag not in stored:
                s.violation(f"create {tag} answered 201 but was not stored")
            if status == 503 and tag in stored:
                s.violation(f"create {tag} answered 503 but was stored")
        self.assert_no_violations()

    def test_cut_during_deletes(self) -> None:
        """Active allocations are deleted while the database is cut:
        every 204 removed the allocation and freed its node, every 503
        left both as they were."""
        s = self.scenario
        proxy, url = self.proxied_db()
        server = self.start_server(*FAST, db_url=url)
        self.enroll({f"{s.prefix}-n{i}": {"resource_class": self.rc()}
                     for i in range(12)})
        made = []
        for _ in range(12):
            resp = s.request(server, "POST", "/v1/allocations",
                             {"resource_class": self.rc()},
                             headers={"Prefer": "wait=10"})
            assert resp is not None and resp.status_code == 201, resp
            made.append(resp.json()["uuid"])
        s.settle_and_check(timeout=30)

        def delete(uuid: str, delay: float) -> Any:
            def call() -> Any:
                time.sleep(delay)
                resp = s.request(server, "DELETE", f"/v1/allocations/{uuid}",
                                 outage=True, timeout=30)
                return uuid, None if resp is None else resp.status_code
            return call

        def cut() -> None:
            time.sleep(0.15)
            s.fault("database cut for 1.5 s")
            proxy.cut_for(1.5)

        calls = [delete(u, s.rng.uniform(0, 0.4)) for u in made]
        results = s.together([*calls, cut])[:-1]
        proxy.wait_restored()
        snap = s.wait_settled(timeout=30)
        for uuid, status in results:
            present = snap.by_uuid(uuid) is not None
            if status == 204 and present:
                s.violation(f"DELETE {uuid} answered 204 but it remains")
            if status == 503 and not present:
                s.violation(f"DELETE {uuid} answered 503 but it is gone")
        for uuid, _status in results:
            if snap.by_uuid(uuid) is not None:
                s.request(server, "DELETE", f"/v1/allocations/{uuid}")
        snap = s.settle_and_check(timeout=30)
        held = [n.uuid for n in snap.nodes.values()
                if n.allocation_id or n.instance_uuid]
        if held:
            s.violation(f"nodes still held after every delete: {held}")
        self.assert_no_violations()

    def test_cut_during_takeover(self) -> None:
        """A process dies holding allocations; the survivor's database is
        cut while it takes them over; all finish once it is back."""
        s = self.scenario
        proxy, url = self.proxied_db()
        survivor = self.start_server(*FAST, db_url=url)
        victim = self.start_server(*FAST, "--allocation-delay", "600")
        self.enroll({f"{s.prefix}-n{i}": {"resource_class": self.rc()}
                     for i in range(12)})
        made = []
        for _ in range(10):
            resp = s.request(victim, "POST", "/v1/allocations",
                             {"resource_class": self.rc()})
            assert resp is not None and resp.status_code == 201, resp
            made.append(resp.json()["uuid"])
        s.signal(victim, signal.SIGKILL)
        # Dead after the heartbeat timeout; take-over rounds every 1 s.
        time.sleep(HEARTBEAT_TIMEOUT + s.rng.uniform(0.5, 1.5))
        s.fault("survivor's database cut for 2 s during take-over")
        proxy.cut_for(2)
        proxy.wait_restored()
        snap = s.settle_and_check(timeout=60)
        for uuid in made:
            stored = snap.by_uuid(uuid)
            if stored is None or stored.state != "active":
                s.violation(f"allocation {uuid} did not finish active: "
                            f"{stored}")
        del survivor
        self.assert_no_violations()


_harness.classes_for(_Outages, globals(), kinds=("sqlite", "postgresql",
                                                 "mysql"))
