"""``serve`` options for heartbeats and take-over are validated."""

from __future__ import annotations

import argparse
import contextlib
import io
import os

import testtools

from baremetal_allocclient.server import cmd


class ServeOptionTests(testtools.TestCase):
    def _parse(self, *argv: str) -> argparse.Namespace:
        return cmd.parse(["serve", "--config-file", os.devnull, *argv])

    def test_defaults(self) -> None:
        args = self._parse()
        self.assertEqual(
            (10.0, 60.0, 60.0, 0.0),
            (args.heartbeat_interval, args.heartbeat_timeout,
             args.takeover_interval, args.allocation_delay),
        )

    def test_takeover_can_be_disabled(self) -> None:
        args = self._parse("--takeover-interval", "0")
        self.assertEqual(0.0, args.takeover_interval)

    def test_bad_values_are_refused_with_a_message(self) -> None:
        cases = [
            (["--heartbeat-interval", "0"], "must be a positive number"),
            (["--heartbeat-timeout", "-1"], "must be a non-negative"),
            (["--takeover-interval", "soon"], "must be a number"),
            (["--allocation-delay", "inf"], "must be a non-negative"),
            (["--heartbeat-interval", "5", "--heartbeat-timeout", "5"],
             "--heartbeat-timeout must be longer than"),
        ]
        for argv, message in cases:
            stderr = io.StringIO()
            with contextlib.redirect_stderr(stderr):
                try:
                    code = cmd.main(["serve", *argv])
                except SystemExit as exc:  # a usage error (argparse)
                    code = exc.code
            self.assertEqual(2, code, argv)
            self.assertIn(message, stderr.getvalue(), argv)
