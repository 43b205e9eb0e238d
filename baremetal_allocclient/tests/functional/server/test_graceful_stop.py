"""SIGTERM: no new connections, the request being served finishes; the
front end stops even when its wake-up trigger is gone."""

from __future__ import annotations

import concurrent.futures
import os
import signal
import threading
import time

import requests
import testtools

from baremetal_allocclient.server.frontend import options
from baremetal_allocclient.server.frontend import server as frontend
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


def _pipe_writing_at(number: int) -> int:
    """A new pipe whose write end is descriptor ``number``; its read end."""
    read_end, write_end = os.pipe()
    if read_end == number:
        read_end, moved = os.dup(read_end), read_end
        os.close(moved)
    if write_end != number:
        os.dup2(write_end, number)
        os.close(write_end)
    return read_end


class ClosedTriggerTests(testtools.TestCase):
    def test_stop_ends_the_loop_when_the_trigger_is_closed(self) -> None:
        """waitress closes the trigger whenever it closes a listening
        socket; stopping then neither raises nor hangs, nor writes to
        whatever file now has the trigger's descriptor number."""
        front = frontend.FrontEnd(
            lambda environ, start: [], "127.0.0.1", 0,
            options.FrontEndOptions(2, 5.0, 5.0, 10), backlog=8,
            max_header=1024, max_body=1024)
        front.prepare()
        loop = threading.Thread(target=front.serve, daemon=True)
        loop.start()
        self.addCleanup(loop.join, 5)
        trigger = front.impl.servers[0].trigger
        number = trigger.trigger  # the write end's descriptor
        trigger.close()
        read_end = _pipe_writing_at(number)  # another file got it
        self.addCleanup(os.close, read_end)
        self.addCleanup(os.close, number)
        os.set_blocking(read_end, False)
        front.stop()
        loop.join(options.CHECK_INTERVAL + 2)
        self.assertFalse(loop.is_alive())
        self.assertRaises(BlockingIOError, os.read, read_end, 1)
