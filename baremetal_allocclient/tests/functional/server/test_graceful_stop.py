"""SIGTERM: no new connections, the request being served finishes."""

from __future__ import annotations

import concurrent.futures
import signal
import time

import requests
import testtools

from baremetal_allocclient.tests.fixtures.launcher import ServerProcess

DELAY = 2.0  # serve --allocation-delay: how long the waiting create lasts


class GracefulStopTests(testtools.TestCase):
    def test_running_request_finishes_after_sigterm(self) -> None:
        server = ServerProcess()
        self.addCleanup(server.cleanup)
        server.upgrade()
        server.start("--allocation-delay", str(DELAY))
        server.make_nodes(1, "rc-stop")
        assert server.proc is not None
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(
                requests.post, server.endpoint + "/v1/allocations",
                json={"resource_class": "rc-stop"}, timeout=30,
                headers={"X-OpenStack-Ironic-API-Version": "latest",
                         "Prefer": "wait=10"})
            time.sleep(DELAY / 4)  # the create is being served
            server.proc.send_signal(signal.SIGTERM)
            time.sleep(DELAY / 4)
            self.assertRaises(requests.ConnectionError, requests.get,
                              server.endpoint + "/", timeout=5)
            response = waiting.result(timeout=30)
        self.assertEqual(201, response.status_code, response.text)
        self.assertEqual("active", response.json()["state"])
        self.assertEqual(0, server.proc.wait(timeout=30), server.log())
