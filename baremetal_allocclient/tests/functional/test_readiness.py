"""How the tests tell that a server they started is ready.

A server on a loaded machine may be listening and still take more than
a second to answer its first request; waiting for it must go on asking
until its deadline instead of failing at once (a CI run lost a takeover
test to a ``ReadTimeout`` from the first ask).
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import testtools

from baremetal_allocclient.tests.fixtures.processes import answers, free_port
from baremetal_allocclient.tests.functional.frozen_server import FrozenServer


class AnswersTest(testtools.TestCase):

    def test_a_server_too_busy_to_answer_is_not_ready(self) -> None:
        frozen = FrozenServer()
        self.addCleanup(frozen.close)
        started = time.monotonic()
        self.assertFalse(answers(frozen.endpoint + "/", timeout=0.3))
        self.assertLess(time.monotonic() - started, 5)
        self.assertEqual(["GET /"], frozen.requests())

    def test_nothing_listening_is_not_ready(self) -> None:
        self.assertFalse(answers(f"http://127.0.0.1:{free_port()}/"))

    def test_any_answer_is_ready(self) -> None:
        class Unavailable(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_error(503)

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Unavailable)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.assertTrue(answers(f"http://127.0.0.1:{server.server_port}/"))
