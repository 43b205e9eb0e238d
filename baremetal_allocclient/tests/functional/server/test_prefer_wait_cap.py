"""Waiting creates cannot take every request thread.

A ``Prefer: wait`` create holds its request thread until the allocation
settles.  A burst of them used to hold all of them, so an unrelated
``GET`` queued for the whole wait.  Now at most half of ``--threads``
wait; the others are answered at once, without ``Preference-Applied``
(the preference allows that), and other requests keep being served.
"""

from __future__ import annotations

import concurrent.futures
import sys
import time

import requests
import testtools

from baremetal_allocclient.tests.fixtures.inprocess import InProcessServer

THREADS = 8
BURST = 24  # three times the request threads
DELAY = 3.0  # serve --allocation-delay: how long each waiting create holds
_HEADERS = {"X-OpenStack-Ironic-API-Version": "latest"}


class PreferWaitCapTests(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.server = InProcessServer()
        self.addCleanup(self.server.cleanup)
        self.server.start("--threads", str(THREADS),
                          "--allocation-delay", str(DELAY))
        self.server.make_nodes(2, "rc-cap")

    def _create(self, _index: int) -> requests.Response:
        return requests.post(
            self.server.endpoint + "/v1/allocations",
            json={"resource_class": "rc-cap"},
            headers={**_HEADERS, "Prefer": "wait=10"}, timeout=60,
        )

    def test_other_requests_are_served_during_a_burst(self) -> None:
        with concurrent.futures.ThreadPoolExecutor(BURST) as pool:
            burst = pool.map(self._create, range(BURST))
            time.sleep(DELAY / 3)  # the burst is in, the waits are not over
            began = time.monotonic()
            resp = requests.get(self.server.endpoint + "/v1/nodes",
                                headers=_HEADERS, timeout=60)
            latency = time.monotonic() - began
            answers = list(burst)
        self.assertEqual(200, resp.status_code)
        waited = [r for r in answers if "Preference-Applied" in r.headers]
        print(f"\nGET during {BURST} waiting creates on {THREADS} threads: "
              f"{latency:.3f} s; {len(waited)} waited", file=sys.stderr)
        # Served in well under the allocation delay (without the cap it
        # queued for a whole wait, DELAY or longer).
        self.assertLess(latency, DELAY / 2)
        self.assertEqual([201] * BURST, [r.status_code for r in answers])
        self.assertLessEqual(len(waited), THREADS // 2)
        self.assertGreaterEqual(len(waited), 1)
        for answer in answers:
            if answer not in waited:
                self.assertEqual("allocating", answer.json()["state"])
        for answer in waited:
            self.assertNotEqual("allocating", answer.json()["state"])
