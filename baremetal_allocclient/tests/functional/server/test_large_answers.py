"""A large answer costs no fresh memory from the kernel each time.

glibc hands the top of its heap back to the kernel as soon as it is
freed; a page of 1,000 allocations (0.6 MB of JSON, built as text and
then as bytes) then took about 230 page faults per request, each answer
mapping fresh pages again (``server.heap`` keeps the heap's top).  The
figure is the server process's own count of minor page faults
(``/proc/PID/stat``), which does not depend on the machine's speed.

The server runs one request thread here.  Each request thread's first
large answer grows its own malloc arena once (about 670 faults); on a
loaded machine the next request can reach a thread that has not served
one yet (its predecessor not yet back among the idle), so with several
threads the count would measure the machine's load, not the heap.
"""

from __future__ import annotations

import platform
import tempfile
from typing import Any

import requests
import testtools

from baremetal_allocclient.tests.fixtures import launcher
from baremetal_allocclient.tests.fixtures.api import API_HEADER
from baremetal_allocclient.tests.fixtures.launcher import ServerProcess

RC = "large-answers"
PAGE = 1000
#: Faults allowed per list once warm: far below one per page of the
#: answer (0.6 MB is about 140 pages; it took about 230 before).
MOST_FAULTS = 20


def _minor_faults(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[7])


class LargeAnswerTests(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        if platform.libc_ver()[0] != "glibc":
            self.skipTest("glibc's heap only")
        self.server = ServerProcess()
        self.addCleanup(self.server.cleanup)
        self.server.upgrade()
        workdir = tempfile.mkdtemp(dir=self.server.tmpdir)
        launcher.enroll(self.server.db_url, workdir, {
            f"{RC}-{i}": {"driver": "fake-hardware", "resource_class": RC}
            for i in range(PAGE)})
        self.server.start("--threads", "1")
        session = requests.Session()
        self.addCleanup(session.close)
        self.session = session
        for _ in range(PAGE):
            self._call("POST", "/v1/allocations", 201,
                       json={"resource_class": RC},
                       headers={"Prefer": "wait=10"})

    def _call(self, method: str, path: str, status: int,
              **kwargs: Any) -> bytes:
        headers = {API_HEADER: "latest",
                   **kwargs.pop("headers", {})}
        response = self.session.request(
            method, self.server.endpoint + path, headers=headers,
            timeout=30, **kwargs)
        self.assertEqual(status, response.status_code, response.text[:500])
        return response.content

    def test_a_page_of_a_thousand_maps_no_fresh_memory(self) -> None:
        def page() -> bytes:
            return self._call("GET", f"/v1/allocations?limit={PAGE}", 200)

        self.assertGreater(len(page()), 500_000)
        for _ in range(5):  # warm: the heap has grown to its size
            page()
        assert self.server.proc is not None
        pid = self.server.proc.pid
        before = _minor_faults(pid)
        for _ in range(20):
            page()
        per_list = (_minor_faults(pid) - before) / 20
        self.assertLessEqual(per_list, MOST_FAULTS,
                             f"{per_list} minor page faults per list")
