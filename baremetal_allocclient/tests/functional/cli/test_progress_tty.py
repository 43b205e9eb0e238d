"""The progress line on a 60-column terminal: it never wraps, so each
redraw replaces it instead of scrolling.

``baremetal-alloc create --wait`` runs on a pseudo-terminal sized 60x24;
eight allocations wait in line for a resource class without nodes, which
makes the full status line far longer than 60 columns.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios
import time

import testtools

from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.tests.functional.cli import clirunner

COLUMNS = 60


def _run_on_pty(argv: list[str], timeout: float) -> tuple[int, str]:
    """Run ``argv`` with stderr on a COLUMNS-wide pty; (exit code, text)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ,
                struct.pack("HHHH", 24, COLUMNS, 0, 0))
    env = clirunner.clean_env()
    env.pop("COLUMNS", None)
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=slave,
                            env=env)
    os.close(slave)
    chunks: list[bytes] = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    code = proc.wait(timeout=30)
    os.close(master)
    return code, b"".join(chunks).decode("utf-8", "replace")


class TestProgressOnNarrowTerminal(testtools.TestCase):
    def test_line_fits_and_redraws_in_place(self) -> None:
        target = targets.reference_target()
        argv = clirunner.argv_for(
            clirunner.STANDALONE, target.endpoint,
            ["create", "--resource-class", targets.unique("empty"),
             "--count", "8", "--wait", "3", "--wait-for-capacity",
             "--delete-on-failure"])
        code, text = _run_on_pty(argv, timeout=120)
        self.assertEqual(1, code, text)
        # The pty turns "\n" into "\r\n": the progress is what comes
        # before the first line of the final report.
        progress = text.split("\r\n", 1)[0]
        draws = [d for d in progress.split("\r") if d.startswith("waiting")]
        self.assertGreaterEqual(len(draws), 2, repr(text))
        for draw in progress.split("\r"):
            self.assertLessEqual(len(draw), COLUMNS - 1, repr(draw))
        # Cut, not wrapped: the eight places in line do not fit.
        self.assertTrue(any(d.endswith("...") for d in draws), repr(text))
