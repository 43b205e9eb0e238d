"""The front end's options and descriptor budget (no server started)."""

from __future__ import annotations

import contextlib
import io
import os
import resource
import socket
from typing import Any

import testtools

from baremetal_allocclient.server import cmd
from baremetal_allocclient.server.frontend import options, paths
from baremetal_allocclient.server.frontend import server as frontend


class FrontEndOptionTests(testtools.TestCase):
    def _parse(self, *argv: str) -> options.FrontEndOptions:
        return options.from_args(
            cmd.parse(["serve", "--config-file", os.devnull, *argv]))

    def test_defaults(self) -> None:
        self.assertEqual(options.FrontEndOptions(64, 30.0, 60.0, 4096),
                         self._parse())

    def test_values(self) -> None:
        self.assertEqual(
            options.FrontEndOptions(8, 2.5, 7.0, 10),
            self._parse("--threads", "8", "--request-timeout", "2.5",
                        "--idle-timeout", "7", "--connection-limit", "10"))

    def test_bad_values_are_refused_with_a_message(self) -> None:
        for argv, message in (
                (["--request-timeout", "0"], "must be a positive number"),
                (["--idle-timeout", "never"], "must be a number"),
                (["--connection-limit", "0"], "must be a positive integer")):
            stderr = io.StringIO()
            with contextlib.redirect_stderr(stderr):
                self.assertRaises(SystemExit, self._parse, *argv)
            self.assertIn(message, stderr.getvalue())


class DescriptorBudgetTests(testtools.TestCase):
    def test_connection_limit_fits_the_open_file_limit(self) -> None:
        self.assertEqual(100, frontend.connection_limit(100, 20000))
        self.assertEqual(1024 - frontend.RESERVED_FILES,
                         frontend.connection_limit(4096, 1024))
        self.assertEqual(1, frontend.connection_limit(4096, 10))

    def test_soft_limit_is_raised_to_the_hard_one(self) -> None:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        self.addCleanup(resource.setrlimit, resource.RLIMIT_NOFILE,
                        (soft, hard))
        lower = min(soft, 256) if hard == resource.RLIM_INFINITY else min(
            soft, hard // 2)
        resource.setrlimit(resource.RLIMIT_NOFILE, (lower, hard))
        raised = frontend.raise_open_file_limit()
        self.assertEqual(raised, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        if hard != resource.RLIM_INFINITY:
            self.assertEqual(hard, raised)

    def test_a_taken_port_is_an_os_error(self) -> None:
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            front = frontend.FrontEnd(
                lambda environ, start: [], "127.0.0.1", port,
                options.FrontEndOptions(2, 5.0, 5.0, 10), backlog=8,
                max_header=1024, max_body=1024)
            self.assertRaises(OSError, front.prepare)
        self.assertEqual({}, front.impl.map)  # nothing left open


class EncodedSlashTests(testtools.TestCase):
    def test_an_encoded_slash_stays_encoded(self) -> None:
        self.assertEqual("/v1/nodes/%2F", paths.path_info("/v1/nodes/%2F"))
        self.assertEqual("/v1/nodes/a%2Fb c%2F",
                         paths.path_info("/v1/nodes/a%2fb%20c%2F?x=%2F"))
        self.assertEqual("/v1/nodes/\xe9%2F",
                         paths.path_info("http://h:1/v1/nodes/%C3%A9%2F"
                                         .replace("%C3%A9", "%E9")))

    def test_without_one_waitress_path_is_kept(self) -> None:
        self.assertIsNone(paths.path_info("/v1/nodes/a%20b?q=%2F"))
        seen: list[str] = []

        def inner(environ: dict[str, Any], _start: Any) -> list[bytes]:
            seen.append(environ["PATH_INFO"])
            return []

        app = paths.keep_encoded_slashes(inner)
        app({"REQUEST_URI": "/v1/a%20b", "PATH_INFO": "/v1/a b"}, None)
        app({"REQUEST_URI": "/v1/a%2Fb", "PATH_INFO": "/v1/a/b"}, None)
        self.assertEqual(["/v1/a b", "/v1/a%2Fb"], seen)
