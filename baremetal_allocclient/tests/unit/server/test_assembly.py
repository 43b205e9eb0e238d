"""Starting ``serve``'s background services does not need the database."""

from __future__ import annotations

import datetime
from unittest import mock

import fixtures
import pymysql
import testtools
from sqlalchemy.exc import OperationalError

from baremetal_allocclient.server import assembly

_LOST = OperationalError("SELECT 1", {}, pymysql.err.OperationalError(
    2013, "Lost connection to MySQL server during query"))


class ResumeTests(testtools.TestCase):
    """The resume thread outlives a database outage (before, an outage
    while ``serve`` finished starting ended the process)."""

    def setUp(self) -> None:
        super().setUp()
        self.useFixture(fixtures.MockPatchObject(assembly, "RESUME_RETRY", 0))
        self.hardware = mock.Mock()
        self.workers = mock.Mock()
        self.started = datetime.datetime(2026, 1, 1)

    def test_both_steps_run_again_until_the_database_answers(self) -> None:
        self.hardware.resume.side_effect = [_LOST, _LOST, None]
        self.workers.resume.side_effect = [_LOST, 3]
        assembly._resume(self.workers, self.hardware, self.started)
        self.assertEqual(3, self.hardware.resume.call_count)
        self.assertEqual(
            [mock.call(created_before=self.started)] * 2,
            self.workers.resume.call_args_list)

    def test_node_transitions_are_finished_before_the_queue_fills(
            self) -> None:
        order: list[str] = []
        self.hardware.resume.side_effect = lambda: order.append("nodes")
        self.workers.resume.side_effect = (
            lambda created_before: order.append("allocations"))
        assembly._resume(self.workers, self.hardware, self.started)
        self.assertEqual(["nodes", "allocations"], order)

    def test_anything_else_is_raised(self) -> None:
        self.hardware.resume.side_effect = ValueError("a bug")
        self.assertRaises(ValueError, assembly._resume, self.workers,
                          self.hardware, self.started)
        self.workers.resume.assert_not_called()

