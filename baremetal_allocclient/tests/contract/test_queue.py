"""Waiting in line for capacity, through the SDK and both command lines,
on both targets: the reference server keeps a line (its queue
extension); against real Ironic the client retries with backoff.

Each test holds the only node of its resource class, asks for another
allocation that must wait, and releases the node a moment later.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import subprocess
import sys
import threading
import time
from typing import Any

from baremetal_allocclient import exceptions, leases
from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.fixtures.processes import clean_env
from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.v1 import queueing
from baremetal_allocclient.v1.client import Client

_BIN = os.path.dirname(sys.executable)
#: How long the node stays held after the waiting request starts.
HOLD = 1.5
#: Real Ironic's SQLite error under concurrent writes.
LOCKED = "database is locked"


class WaitingInLine(base.ContractMixin):
    """``allocate(queue=True)`` and ``create --wait-for-capacity``."""

    def setUp(self) -> None:
        super().setUp()
        self.client = Client.from_endpoint(self.target.endpoint)
        self.addCleanup(self.client.close)
        self.rc, nodes = self.enroll(1)
        self.node = nodes[0]
        self.holder = self.client.allocate(self.rc, timeout=60)

    def _release_later(self, delay: float = HOLD) -> threading.Thread:
        # Through the target's own request, which retries Ironic's 500
        # "database is locked" (the waiting client's retries are being
        # processed by its conductor meanwhile): the release is the
        # test's set-up, and a failed one would only show as a timeout.
        path = f"/v1/allocations/{self.holder.uuid}"
        thread = threading.Thread(target=lambda: (
            time.sleep(delay), self.target.request("DELETE", path)))
        thread.start()
        self.addCleanup(thread.join)
        return thread

    def _left(self) -> list[str]:
        return [str(a.uuid) for a in
                self.client.list_allocations(resource_class=self.rc)]

    def test_server_advertises_a_line_only_on_this_server(self) -> None:
        self.assertEqual(self.serves_allocations, self.client.supports_queue())

    def test_allocate_waits_for_the_released_node(self) -> None:
        self._release_later()
        with self.assertLogs("baremetal_allocclient", "INFO") as logs:
            logging.getLogger("baremetal_allocclient").info("start")
            got = self.client.allocate(self.rc, queue=True, timeout=60)
        self.addCleanup(self.client.delete_allocation, str(got.uuid))
        self.assertEqual(("active", self.node["uuid"]),
                         (got.state, got.node_uuid))
        unfair = any(queueing.UNFAIR in line for line in logs.output)
        # Against Ironic the client says that the order is not fair.
        self.assertEqual(not self.serves_allocations, unfair)
        self.assertEqual([str(got.uuid)], self._left())

    def test_the_lease_starts_when_the_node_is_given(self) -> None:
        """A 2 s lease asked for by an allocation that waits 3.5 s for
        its node has not ended when the node is given: waiting does not
        eat the lease (server line or client retries alike)."""
        self._release_later(3.5)
        got = self.client.allocate(self.rc, queue=True, timeout=60,
                                   lease="2s")
        served = leases.utcnow()
        self.addCleanup(self.client.delete_allocation, str(got.uuid))
        ends = leases.expires_at(got.marks)
        assert ends is not None
        self.assertGreater(ends, served, got.marks)
        self.assertLessEqual(ends, served + datetime.timedelta(seconds=3),
                             got.marks)
        self.assertEqual("2s", got.marks[leases.DURATION_KEY])

    def test_budget_end_leaves_nothing_behind(self) -> None:
        started = time.monotonic()
        with self.assertRaises(exceptions.WaitTimeout):
            self.client.allocate(self.rc, queue=True, timeout=3)
        self.assertLess(time.monotonic() - started, 3 + 2)  # clean-up grace
        self.assertEqual([str(self.holder.uuid)], self._left())

    def test_plain_clients_cannot_send_the_field(self) -> None:
        """Without the opt-in header the body is Ironic's: 400 on both."""
        response = self.target.request(
            "POST", "/v1/allocations",
            {"resource_class": self.rc, "queue": {"timeout": 5}})
        self.assertEqual(400, response.status_code, response.text)
        self.assertEqual([str(self.holder.uuid)], self._left())

    def _cli(self, program: str, *args: str) -> subprocess.Popen[str]:
        prefix = (["baremetal", "allocation"] if program == "openstack"
                  else [])
        return subprocess.Popen(
            [os.path.join(_BIN, program), "--os-auth-type", "none",
             "--os-endpoint", self.target.endpoint, *prefix, *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=clean_env())

    def test_both_command_lines_wait_for_capacity(self) -> None:
        for index, program in enumerate(("baremetal-alloc", "openstack")):
            if index:  # the node is held again for the second program
                self.holder = self.client.allocate(self.rc, timeout=60)
            returncode, out, err = self._wait_for_capacity(program)
            self.assertEqual(0, returncode, err)
            created: dict[str, Any] = json.loads(out)
            self.assertEqual(("active", self.node["uuid"]),
                             (created["state"], created["node_uuid"]))
            self.assertEqual(not self.serves_allocations,
                             queueing.UNFAIR in err)
            self.client.delete_allocation(created["uuid"])

    def _wait_for_capacity(self, program: str) -> tuple[int, str, str]:
        """``create --wait-for-capacity`` through ``program`` while the
        node is released; again when real Ironic on SQLite left the
        waiting allocation ``allocating`` after logging "database is
        locked" (its conductor could not record the outcome, so the
        command line waits out its budget: seen in CI), with what that
        round left deleted and the node held again."""
        for attempt in range(3):
            before = self.target.log_mentions(LOCKED)
            proc = self._cli(program, "create", "--resource-class", self.rc,
                             "--wait", "60", "--wait-for-capacity",
                             "-f", "json")
            self._release_later().join()
            out, err = proc.communicate(timeout=90)
            stuck = (proc.returncode != 0
                     and self.target.log_mentions(LOCKED) > before)
            if not stuck or attempt == 2:
                return proc.returncode, out, err
            for left in self._left():
                self.target.request("DELETE", f"/v1/allocations/{left}")
            self.holder = self.client.allocate(self.rc, timeout=60)
        raise AssertionError("unreachable")

    def test_command_line_needs_wait(self) -> None:
        proc = self._cli("baremetal-alloc", "create", "--resource-class",
                         self.rc, "--wait-for-capacity")
        _out, err = proc.communicate(timeout=60)
        self.assertEqual(2, proc.returncode)
        self.assertIn("--wait-for-capacity needs --wait", err)
        self.assertEqual([str(self.holder.uuid)], self._left())


globals().update(targets.per_target(WaitingInLine))
