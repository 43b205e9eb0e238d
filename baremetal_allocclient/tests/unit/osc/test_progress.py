"""Progress lines for long waits."""

from __future__ import annotations

import io
import threading

import testtools

from baremetal_allocclient.osc import progress
from baremetal_allocclient.v1 import Allocation, Progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class TestProgress(testtools.TestCase):
    def test_waiting_in_line_shows_the_place(self) -> None:
        waiting = Allocation.from_wire(
            {"uuid": "u", "state": "allocating",
             "queue": {"deadline": "2026-12-01T10:00:00+00:00",
                       "position": 3}})
        self.assertEqual("waiting in line (#3)",
                         progress.shown_state(waiting))
        plain = Allocation.from_wire({"uuid": "u", "state": "allocating"})
        self.assertEqual("allocating", progress.shown_state(plain))

    def test_summary_counts_states(self) -> None:
        self.assertEqual(
            "waiting 3s: 2 active, 1 allocating, 1 creating",
            progress.summary(["active", "allocating", "active", None], 3.2),
        )

    def test_only_on_a_terminal(self) -> None:
        self.assertIsNone(progress.for_stream(io.StringIO()))
        self.assertIsNotNone(progress.for_stream(_Tty()))

    def test_draws_at_once_and_every_interval(self) -> None:
        stream = _Tty()
        now = [100.0]
        ticked = threading.Event()

        class _Stream(_Tty):
            def write(self, text: str) -> int:
                if "waiting 1s" in text:
                    ticked.set()
                return super().write(text)

        stream = _Stream()
        reporter = progress.TtyProgress(stream, _clock=lambda: now[0],
                                        _interval=0.01)
        reporter.start(2)
        self.assertIn("\rwaiting 0s: 2 creating", stream.getvalue())
        now[0] += 1.5  # time since the command started, not since a poll
        self.assertTrue(ticked.wait(5))
        reporter.close()
        self.assertIn("waiting 1s: 2 creating", stream.getvalue())

    def test_draws_then_clears(self) -> None:
        stream = _Tty()
        reporter = progress.TtyProgress(stream, _clock=lambda: 101.0)
        reporter._start = 100.0
        allocations = (
            Allocation(uuid="a", state="allocating"),
            Allocation(uuid="b", state="active"),
        )
        reporter(Progress(elapsed=1.0, polls=1, pending=1, finished=1,
                          allocations=allocations))
        self.assertEqual(
            "\rwaiting 1s: 1 active, 1 allocating", stream.getvalue()
        )
        reporter.close()
        self.assertTrue(stream.getvalue().endswith("\r"))
        self.assertNotIn("\n", stream.getvalue())
