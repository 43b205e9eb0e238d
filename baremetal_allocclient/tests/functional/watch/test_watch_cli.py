"""``baremetal-alloc watch`` against in-process servers: on the stream
(JSON lines, ``--until-state``), and polling a server that does not
offer the stream (said once on stderr)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid

import testtools

from baremetal_allocclient.tests.fixtures.inprocess import serve_for_class


def _watch(endpoint: str, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    return subprocess.Popen(
        [sys.executable, "-m", "baremetal_allocclient.shell",
         "--os-endpoint", endpoint, "watch", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


class _CliTests:
    server: object
    OPTIONS: tuple[str, ...] = ()

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        cls.server = serve_for_class(cls, *cls.OPTIONS)

    def _until_error(self, *extra: str) -> tuple[int, str, str]:
        case: testtools.TestCase = self  # type: ignore[assignment]
        server = self.server
        name = "c-" + uuid.uuid4().hex[:8]
        proc = _watch(server.endpoint, "--name", name,  # type: ignore
                      "--until-state", "error", "--timeout", "20", *extra)
        case.addCleanup(proc.kill)
        time.sleep(1.5)  # the command is up
        server.expect(201, "POST", "/v1/allocations",  # type: ignore
                      {"resource_class": "none-" + name, "name": name})
        out, err = proc.communicate(timeout=30)
        return proc.returncode, out, err


class StreamCliTests(_CliTests, testtools.TestCase):

    def test_json_lines_until_the_state(self) -> None:
        code, out, err = self._until_error("-f", "json")
        self.assertEqual(0, code, err)
        records = [json.loads(line) for line in out.splitlines()]
        self.assertEqual(["created", "updated"],
                         [r["op"] for r in records])
        self.assertEqual("error", records[-1]["allocation"]["state"])
        self.assertLess(records[0]["cursor"], records[1]["cursor"])
        self.assertNotIn("polling", err)


class PollingCliTests(_CliTests, testtools.TestCase):
    OPTIONS = ("--watch-max-watchers", "0")  # no stream offered

    def test_polls_and_says_so_once(self) -> None:
        code, out, err = self._until_error("--poll-interval", "0.2")
        self.assertEqual(0, code, err)
        self.assertEqual(1, err.count("polling every 0.2 s"))
        lines = out.splitlines()
        self.assertTrue(lines[-1].startswith("- "), lines)
        self.assertIn(" error ", lines[-1])
