"""``create --all-or-nothing/--group``, ``list --group``, ``delete
--group``: usage errors exit 2 before any request; the options reach the
SDK as documented."""

from __future__ import annotations

from typing import Any
from unittest import mock

import testtools

from baremetal_allocclient import exceptions, shell
from baremetal_allocclient.tests.unit.osc import test_commands
from baremetal_allocclient.v1 import AllocationRequest
from baremetal_allocclient.v1.resources import Allocation


class GroupClient(test_commands.FakeClient):
    def __init__(self) -> None:
        super().__init__()
        self.group_error: Exception | None = None
        self.released: list[str] = []

    def allocate_group(self, count: int, request: AllocationRequest,
                       **kw: Any) -> list[Allocation]:
        self._record("allocate_group", count, request, **kw)
        if self.group_error is not None:
            raise self.group_error
        return [test_commands._alloc(f"u{i}", name=f"{request.name}-{i}")
                for i in range(count)]

    def release_group(self, name: str) -> list[str]:
        self._record("release_group", name)
        return self.released


class GroupOptionsTest(test_commands.CommandTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.client = GroupClient()
        patcher = mock.patch.object(shell, "build_client",
                                    return_value=self.client)
        patcher.start()
        self.addCleanup(patcher.stop)

    def test_usage_errors_exit_2_without_a_request(self) -> None:
        for argv, fragment in (
            (("--count", "2", "--group", "g", "--name", "x"),
             "name the group with --group"),
            (("--count", "2", "--all-or-nothing", "--node", "n"),
             "--node cannot be combined"),
            (("--count", "2", "--group", "a b"), "invalid group name"),
            (("--count", "2", "--group", "g", "-f", "shell"),
             "a group is a list"),
        ):
            code, _out, err = self.run_cli(
                "create", "--resource-class", "rc", *argv)
            self.assertEqual(2, code, err)
            self.assertIn(fragment, err)
        code, _out, err = self.run_cli("create", "--count", "2",
                                       "--all-or-nothing")
        self.assertEqual(2, code)
        self.assertIn("--resource-class is required", err)
        self.assertEqual([], self.client.calls)

    def test_group_options_reach_the_sdk(self) -> None:
        code, out, _err = self.run_cli(
            "create", "--resource-class", "rc", "--count", "2", "--group",
            "g", "--trait", "CUSTOM_X", "--wait", "30", "-f", "value",
            "-c", "name")
        self.assertEqual(0, code)
        self.assertEqual(["g-0", "g-1"], out.split())
        (_name, (count, request), kw), = self.client.calls
        self.assertEqual((2, "rc"), (count, request.resource_class))
        self.assertEqual(("g", ("CUSTOM_X",), 30.0),
                         (request.name, request.traits, kw["timeout"]))

    def test_a_failed_group_says_why_and_exits_1(self) -> None:
        self.client.group_error = exceptions.GroupFailed(
            "Group of 2 not reserved: allocation 2 of 2 (g-1) failed: "
            "No available nodes")
        code, out, err = self.run_cli(
            "create", "--resource-class", "rc", "--count", "2",
            "--all-or-nothing")
        self.assertEqual(1, code)
        self.assertEqual("", out)
        self.assertIn("allocation 2 of 2 (g-1) failed: No available nodes",
                      err)
        self.assertIn("every allocation made for it was deleted", err)

    def test_delete_group(self) -> None:
        self.client.released = ["u1", "u2"]
        code, out, _err = self.run_cli("delete", "--group", "g")
        self.assertEqual(0, code)
        self.assertEqual(2, out.count("Deleted allocation"))
        self.client.released = []
        self.assertEqual(1, self.run_cli("delete", "--group", "g")[0])
        self.assertEqual(0, self.run_cli("delete", "--group", "g",
                                         "--ignore-missing")[0])
        self.assertEqual(2, self.run_cli("delete", "--group", "g", "a")[0])
        self.assertEqual(2, self.run_cli("delete")[0])

    def test_list_group(self) -> None:
        self.assertEqual(0, self.run_cli("list", "--group", "g")[0])
        self.assertEqual("g", self.client.calls[0][2]["group"])


class GroupInterruptMessageTests(testtools.TestCase):
    """An interrupted group create never claims a clean-up it missed."""

    def test_nothing_left(self) -> None:
        from baremetal_allocclient.osc.v1 import group_options

        self.assertEqual("Interrupted; the group's allocations were "
                         "deleted\n",
                         group_options.interrupted_message("g", ()))

    def test_members_left_are_named_with_the_release_command(self) -> None:
        from baremetal_allocclient.osc.v1 import group_options

        self.assertEqual(
            "Interrupted; allocations left: u1 u2 (release with: "
            "baremetal-alloc delete --group g)\n",
            group_options.interrupted_message(
                "g", (("u1", "timeout"), ("u2", "timeout"))))
