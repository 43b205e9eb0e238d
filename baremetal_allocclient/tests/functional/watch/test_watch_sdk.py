"""The SDK on the change stream, against an in-process server (real
waitress front end on loopback): typed changes in order, a wait made on
the stream, the deadline, a cursor out of the log."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import testtools

from baremetal_allocclient import exceptions
from baremetal_allocclient.tests.fixtures.inprocess import serve_for_class
from baremetal_allocclient.v1 import Client
from baremetal_allocclient.v1.watching import AllocationChange


class WatchSdkTests(testtools.TestCase):

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.server = serve_for_class(
            cls, "--watch-heartbeat", "0.5", "--watch-buffer-limit", "4096",
            "--allocation-delay", "1")

    def _client(self) -> Client:
        client = Client.from_endpoint(self.server.endpoint)
        self.addCleanup(client.close)
        return client

    def _collect(self, client: Client, count: int, **filters: Any
                 ) -> tuple[threading.Thread, list[AllocationChange]]:
        got: list[AllocationChange] = []

        def run() -> None:
            for change in client.watch_allocations(timeout=20, **filters):
                got.append(change)
                if len(got) >= count:
                    return

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        time.sleep(0.5)  # the stream is open
        return thread, got

    def test_changes_are_typed_and_in_order(self) -> None:
        client = self._client()
        name = "w-" + uuid.uuid4().hex[:8]
        # Created, error (no node), then 12 patches of 1 kB each (more
        # than the 4 kB buffer limit in all: a reader that reads is not
        # dropped).
        thread, got = self._collect(client, 14, name=name)
        created = client.create_allocation(resource_class="none-" + name,
                                           name=name)
        for i in range(12):
            client.update_allocation(
                created.uuid, set_extra={"i": str(i), "pad": "x" * 1000})
        thread.join(30)
        self.assertEqual(14, len(got), got)
        self.assertEqual("created", got[0].op)
        self.assertEqual(created.uuid, got[0].allocation.uuid)
        self.assertIn("error", [c.allocation.state for c in got])
        cursors = [c.cursor for c in got]
        self.assertEqual(sorted(set(cursors)), cursors)
        # (The state's change after the patches repeats the last extra.)
        self.assertEqual([str(i) for i in range(12)], list(dict.fromkeys(
            c.allocation.extra["i"] for c in got
            if "i" in c.allocation.extra)))

    def test_a_wait_on_the_stream_asks_twice(self) -> None:
        client = self._client()
        self.assertTrue(client.supports_watch())
        name = "s-" + uuid.uuid4().hex[:8]
        created = client.create_allocation(resource_class="none-" + name,
                                           name=name)
        began = time.monotonic()
        error = self.assertRaises(exceptions.AllocationFailed,
                                  client.wait_for_allocation, created,
                                  timeout=20)
        self.assertLess(time.monotonic() - began, 5)
        self.assertEqual(created.uuid, error.allocation.uuid)
        gets = self.server.log().count(f"GET /v1/allocations/{created.uuid}")
        self.assertEqual(2, gets)  # at the stream's start, and at the end

    def test_a_watch_ends_at_its_deadline(self) -> None:
        client = self._client()
        began = time.monotonic()
        found = list(client.watch_allocations(
            timeout=1.5, name="nothing-" + uuid.uuid4().hex))
        self.assertEqual([], found)
        self.assertLess(time.monotonic() - began, 3)

    def test_a_cursor_ahead_of_the_log_is_gone(self) -> None:
        client = self._client()
        self.assertRaises(exceptions.Gone, list,
                          client.watch_allocations(since=10**15, timeout=5))
