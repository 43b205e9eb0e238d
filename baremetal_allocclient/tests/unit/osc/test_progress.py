"""Progress lines for long waits."""

from __future__ import annotations

import io

import testtools

from baremetal_allocclient.osc import progress
from baremetal_allocclient.v1 import Allocation, Progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class TestProgress(testtools.TestCase):
    def test_summary_counts_states(self) -> None:
        self.assertEqual(
            "waiting 3s: 2 active, 1 allocating, 1 unknown",
            progress.summary(["active", "allocating", "active", None], 3.2),
        )

    def test_only_on_a_terminal(self) -> None:
        self.assertIsNone(progress.for_stream(io.StringIO()))
        self.assertIsNotNone(progress.for_stream(_Tty()))

    def test_draws_then_clears(self) -> None:
        stream = _Tty()
        reporter = progress.for_stream(stream)
        assert reporter is not None
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
