"""A process dies holding ``allocating`` allocations: nothing stays stuck.

``--allocation-delay`` keeps the victim's allocations ``allocating``
long enough to kill it.  Intervals are short (:data:`_cluster.FAST`):
heartbeat every 0.5 s, dead after 3 s, take-over every 1 s.
"""

from __future__ import annotations

import signal
import sys
import time
from typing import Any

import testtools
from sqlalchemy import select

from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Allocation, Conductor
from baremetal_allocclient.tests.fixtures.launcher import (
    ServerProcess,
)
from baremetal_allocclient.tests.functional.multiprocess import (
    _cluster,
)

HEARTBEAT_TIMEOUT = 3.0
TAKEOVER_INTERVAL = 1.0
# Processing the taken-over allocations, the test's polling, and room
# for a loaded machine (measured: 3-4 s in total on an idle one).
SLACK = 5.0
HELD = 20


class _TakeoverTests(_cluster.ClusterCase):
    """Mixin; ``kind`` is set by the concrete classes."""

    def setUp(self) -> None:
        super().setUp()
        _cluster.enroll(self.db.url, self.workdir, HELD + 5, self.rc)
        self.database = Database(self.db.url)
        self.case.addCleanup(self.database.dispose)

    def _start(self, name: str, *extra: str) -> ServerProcess:
        server = _cluster.start(
            self.db.url, f"{self.prefix}-{name}", *_cluster.FAST, *extra
        )
        self.case.addCleanup(server.cleanup)
        return server

    def _hold(self, server: ServerProcess, count: int) -> list[str]:
        posted = _cluster.post_many([server], count,
                                    {"resource_class": self.rc}, 8)
        self.case.assertEqual([201] * count, [s for s, _b in posted])
        uuids = [body["uuid"] for _s, body in posted]
        states = {a["state"] for a in _cluster.allocations(server, self.rc)}
        self.case.assertEqual({"allocating"}, states)
        return uuids

    def _affinities(self, uuids: list[str]) -> dict[str, str | None]:
        with self.database.read() as session:
            rows = session.execute(
                select(Allocation.uuid, Allocation.conductor_affinity)
                .where(Allocation.uuid.in_(uuids))
            ).all()
        return {str(r[0]): r[1] for r in rows}

    def _assert_all_active(self, final: list[dict[str, Any]],
                           count: int) -> None:
        self.case.assertEqual(["active"] * count,
                              [a["state"] for a in final])
        nodes = [a["node_uuid"] for a in final]
        self.case.assertEqual(count, len(set(nodes)))

    def test_survivors_finish_a_killed_process_allocations(self) -> None:
        victim = self._start("victim", "--allocation-delay", "600",
                             "--workers", "4")
        survivors = {
            f"{self.prefix}-{n}": self._start(n)
            for n in ("survivor-a", "survivor-b")
        }
        uuids = self._hold(victim, HELD)
        _cluster.kill(victim)
        killed = time.monotonic()
        any_survivor = next(iter(survivors.values()))
        final = _cluster.wait_settled(
            any_survivor, self.rc,
            timeout=HEARTBEAT_TIMEOUT + TAKEOVER_INTERVAL + 30,
        )
        latency = time.monotonic() - killed
        print(f"\n{self.kind}: {HELD} allocations of a SIGKILLed process "
              f"finished {latency:.1f} s after the kill (heartbeat "
              f"timeout {HEARTBEAT_TIMEOUT:.0f} s, take-over every "
              f"{TAKEOVER_INTERVAL:.0f} s)", file=sys.stderr)
        self._assert_all_active(final, HELD)
        self.case.assertLess(
            latency, HEARTBEAT_TIMEOUT + TAKEOVER_INTERVAL + SLACK
        )

        # Each one was claimed and finished by exactly one survivor.
        finished = _cluster.finished_in_logs(survivors, uuids)
        self.case.assertEqual(sorted(uuids), sorted(finished))
        self.case.assertEqual(
            [], [u for u, who in finished.items() if len(who) != 1]
        )
        claims: dict[str, list[str]] = {}
        for name, server in survivors.items():
            for line in server.log().splitlines():
                if "Took over allocation " in line:
                    claimed = line.split("Took over allocation ")[1]
                    claims.setdefault(claimed.split()[0], []).append(name)
        self.case.assertEqual(sorted(uuids), sorted(claims))
        for u in uuids:
            self.case.assertEqual(claims[u], finished[u])
        affinities = self._affinities(uuids)
        for u in uuids:
            self.case.assertEqual(finished[u][0], affinities[u])
        for server in survivors.values():
            self.case.assertNotIn("Traceback", server.log())

    def test_restarted_process_resumes_its_own(self) -> None:
        phoenix = self._start("phoenix", "--allocation-delay", "600")
        # Take-over disabled: only the restart can finish them.
        bystander = self._start("bystander", "--takeover-interval", "0")
        uuids = self._hold(phoenix, 10)
        _cluster.kill(phoenix)
        time.sleep(HEARTBEAT_TIMEOUT + 2 * TAKEOVER_INTERVAL)
        states = {a["state"] for a in _cluster.allocations(bystander,
                                                           self.rc)}
        self.case.assertEqual({"allocating"}, states)

        # Restarted without the delay: it must simply finish them.
        phoenix.start("--conductor-name", f"{self.prefix}-phoenix",
                      *_cluster.DB_CONNECTIONS, *_cluster.FAST,
                      timeout=60)
        final = _cluster.wait_settled(bystander, self.rc, timeout=30)
        self._assert_all_active(final, 10)
        self.case.assertIn("Resuming 10 unfinished allocation(s)",
                           phoenix.log())
        finished = _cluster.finished_in_logs(
            {"phoenix": phoenix, "bystander": bystander}, uuids)
        self.case.assertEqual({u: ["phoenix"] for u in uuids}, finished)

    def test_sigterm_hands_back_to_a_survivor(self) -> None:
        # A long heartbeat timeout: only the offline mark can explain a
        # quick take-over.
        patient = ("--heartbeat-timeout", "60")
        leaving = self._start("leaving", "--allocation-delay", "600",
                              *patient)
        survivor = self._start("survivor", *patient)
        uuids = self._hold(leaving, 10)
        assert leaving.proc is not None
        leaving.proc.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        self.case.assertEqual(0, leaving.proc.wait(timeout=20))
        self.case.assertLess(time.monotonic() - stopped, 10)
        with self.database.read() as session:
            online = session.scalar(
                select(Conductor.online)
                .where(Conductor.hostname == f"{self.prefix}-leaving")
            )
        self.case.assertIs(False, online)
        # Offline is dead at once: no need to wait for the heartbeat.
        final = _cluster.wait_settled(survivor, self.rc, timeout=30)
        latency = time.monotonic() - stopped
        print(f"\n{self.kind}: 10 allocations handed back on SIGTERM "
              f"finished {latency:.1f} s after the signal",
              file=sys.stderr)
        self._assert_all_active(final, 10)
        self.case.assertLess(latency, 30)
        finished = _cluster.finished_in_logs({"survivor": survivor}, uuids)
        self.case.assertEqual({u: ["survivor"] for u in uuids}, finished)
        self.case.assertNotIn("Traceback", leaving.log())


class SQLiteTakeoverTests(_TakeoverTests, testtools.TestCase):
    """Several processes may share one SQLite file on one host too."""

    kind = "sqlite"


class PostgreSQLTakeoverTests(_TakeoverTests, testtools.TestCase):
    kind = "postgresql"


class MySQLTakeoverTests(_TakeoverTests, testtools.TestCase):
    kind = "mysql"
