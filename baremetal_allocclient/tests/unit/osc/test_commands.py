"""The commands inside baremetal-alloc with a fake SDK client.

These pin down the exit-code mapping (0 ok, 1 failure, 2 usage) and how
options become SDK calls, without a server.
"""

from __future__ import annotations

import datetime
import io
import json
import logging
from collections.abc import Iterator
from typing import Any
from unittest import mock

import testtools

from baremetal_allocclient import exceptions, leases, shell
from baremetal_allocclient.constraints import Constraints
from baremetal_allocclient.v1 import Allocation, AllocationRequest, budget


def _alloc(uuid: str, state: str = "active", **kw: Any) -> Allocation:
    return Allocation(uuid=uuid, state=state, resource_class="rc", **kw)


class FakeClient:
    """Records calls; behaviour is set per test through attributes."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.missing: set[str] = set()
        self.wait_error: BaseException | None = None
        self.listed: list[Allocation] = []
        self.list_error: Exception | None = None
        self._n = 0

    def _record(self, method: str, /, *args: Any, **kw: Any) -> None:
        self.calls.append((method, args, kw))

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]

    def deadline(self, timeout: float | None) -> budget.Deadline:
        return budget.Deadline(timeout)

    def create_allocation(self, *args: Any, **kw: Any) -> Allocation:
        self._record("create_allocation", *args, **kw)
        self._n += 1
        return _alloc(f"u{self._n}", "allocating")

    def wait_for_allocation(self, alloc: Allocation, **kw: Any) -> Allocation:
        self._record("wait_for_allocation", alloc, **kw)
        if self.wait_error is not None:
            raise self.wait_error
        return _alloc(str(alloc.uuid), node_uuid="n-" + str(alloc.uuid))

    def wait_for_allocations(self, allocs: list[Allocation],
                             **kw: Any) -> list[Allocation]:
        self._record("wait_for_allocations", list(allocs), **kw)
        if self.wait_error is not None:
            raise self.wait_error
        return [_alloc(str(a.uuid)) for a in allocs]

    def delete_allocation(self, ident: str, **kw: Any) -> bool:
        self._record("delete_allocation", ident, **kw)
        if ident in self.missing:
            if kw.get("ignore_missing"):
                return False
            raise exceptions.NotFound(f"Allocation {ident} could not be "
                                      "found.", status_code=404)
        return True

    def list_allocations(self, **kw: Any) -> Iterator[Allocation]:
        self._record("list_allocations", **kw)

        def generate() -> Iterator[Allocation]:
            if self.list_error is not None:
                raise self.list_error
            yield from self.listed

        return generate()

    def get_allocation(self, ident: str, **kw: Any) -> Allocation:
        self._record("get_allocation", ident, **kw)
        return _alloc(ident, name="nm")

    def update_allocation(self, ident: str, **kw: Any) -> Allocation:
        self._record("update_allocation", ident, **kw)
        return _alloc(ident)

    def explain(self, *args: Any, **kw: Any) -> dict[str, Any]:
        self._record("explain", *args, **kw)
        return {"resource_class": "rc", "first_empty": None,
                "funnel": [{"step": "resource_class", "count": 1}]}


class CommandTestCase(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.client = FakeClient()
        patcher = mock.patch.object(shell, "build_client",
                                    return_value=self.client)
        patcher.start()
        self.addCleanup(patcher.stop)
        root = logging.getLogger("")
        before = list(root.handlers)
        self.addCleanup(lambda: setattr(root, "handlers", before))

    def run_cli(self, *argv: str) -> tuple[int, str, str]:
        app = shell.AllocationApp()
        app.stdout = io.StringIO()
        app.stderr = io.StringIO()
        # argparse writes usage errors to sys.stderr itself.
        with mock.patch("sys.stderr", new=app.stderr):
            try:
                code = app.run(["--os-endpoint", "http://127.0.0.1:9", *argv])
            except SystemExit as exc:
                code = int(exc.code or 0)
        return code, app.stdout.getvalue(), app.stderr.getvalue()


class TestExitCodes(CommandTestCase):
    def test_delete_reports_each_failure(self) -> None:
        self.client.missing = {"gone"}
        code, out, err = self.run_cli("delete", "a", "gone", "b")
        self.assertEqual(1, code)
        self.assertEqual("Deleted allocation a\nDeleted allocation b\n", out)
        self.assertIn("Failed to delete 1 of 3", err)
        self.assertIn("gone: Allocation gone could not be found", err)
        self.assertNotIn("Traceback", err)

    def test_failed_wait_prints_last_error_and_cleans_up(self) -> None:
        failed = _alloc("u1", "error", last_error="no node has CUSTOM_X")
        self.client.wait_error = exceptions.AllocationFailed(
            failed, failed.last_error)
        code, out, err = self.run_cli(
            "create", "--resource-class", "rc", "--wait",
            "--delete-on-failure")
        self.assertEqual(1, code)
        self.assertEqual("", out)
        self.assertIn("Allocation u1 failed: no node has CUSTOM_X", err)
        self.assertIn("Deleted allocation u1", err)
        deletes = [c for c in self.client.calls
                   if c[0] == "delete_allocation"]
        self.assertEqual([("u1",)], [c[1] for c in deletes])
        self.assertTrue(deletes[0][2]["ignore_missing"])
        wait = self.client.calls[1]
        # bare --wait: no limit
        self.assertIsNone(wait[2]["deadline"].seconds)

    def test_failed_wait_without_cleanup_keeps_allocation(self) -> None:
        self.client.wait_error = exceptions.WaitTimeout(
            [_alloc("u1", "allocating")], 5.0)
        code, out, err = self.run_cli("create", "--resource-class", "rc",
                                      "--wait", "5", "-f", "json")
        self.assertEqual(1, code)
        self.assertIn("Timed out after 5 s", err)
        self.assertNotIn("delete_allocation", self.client.names())
        # Nothing hidden: the allocation left behind is printed and named.
        self.assertEqual("u1", json.loads(out)["uuid"])
        self.assertIn("allocations left: u1 (release with: "
                      "baremetal-alloc delete u1)", err)

    def test_interrupted_wait_cleans_up(self) -> None:
        self.client.wait_error = KeyboardInterrupt()
        code, _, _ = self.run_cli("create", "--resource-class", "rc",
                                  "--count", "2", "--wait",
                                  "--delete-on-failure")
        self.assertEqual(130, code)
        self.assertEqual(2, self.client.names().count("delete_allocation"))

    def test_usage_errors_exit_2_before_any_request(self) -> None:
        for argv in (
            ("create",),
            ("create", "--resource-class", "rc", "--count", "2",
             "--uuid", "x"),
            ("set", "a"),
            ("unset", "a"),
            ("list", "--sort", "extra"),
            ("list", "--limit", "x"),
            ("frobnicate",),
        ):
            code, _, err = self.run_cli(*argv)
            self.assertEqual(2, code, argv)
            self.assertNotIn("Traceback", err)
        self.assertEqual([], self.client.calls)

    def test_list_error_before_any_output(self) -> None:
        self.client.list_error = exceptions.ConnectionFailed(
            "http://127.0.0.1:9", "Connection refused")
        code, out, err = self.run_cli("list", "-f", "value")
        self.assertEqual(1, code)
        self.assertEqual("", out)
        self.assertIn("Unable to reach", err)


class TestOptionsToCalls(CommandTestCase):
    def test_create_options(self) -> None:
        code, out, _ = self.run_cli(
            "create", "--resource-class", "rc", "--trait", "T1", "--trait",
            "T2", "--candidate-node", "n1", "--name", "x", "--uuid", "u",
            "--owner", "p", "--extra", "a=1", "--extra", "a=2", "-f", "json")
        self.assertEqual(0, code)
        _, args, kw = self.client.calls[0]
        self.assertEqual((AllocationRequest(
            "rc", traits=("T1", "T2"), candidate_nodes=("n1",), name="x",
            uuid="u", extra={"a": "2"}, node=None, owner="p",
            constraints=None, lease=None, queue=False),), args)
        self.assertIsNone(kw.pop("deadline").seconds)
        self.assertEqual({"prefer_wait": None}, kw)
        self.assertEqual("u1", json.loads(out)["uuid"])

    def test_every_allocation_of_a_create_has_the_same_lease_end(
            self) -> None:
        before = leases.utcnow()
        code, _, _ = self.run_cli(
            "create", "--resource-class", "rc", "--count", "3", "--lease",
            "2h", "--extra", "k=v", "-f", "value")
        self.assertEqual(0, code)
        requests = [args[0] for name, args, _ in self.client.calls
                    if name == "create_allocation"]
        self.assertEqual(3, len(requests))
        self.assertEqual([None] * 3, [r.lease for r in requests])
        extras = [dict(r.extra or {}) for r in requests]
        self.assertEqual([extras[0]] * 3, extras)
        end = leases.parse_timestamp(extras[0].pop(leases.EXPIRES_KEY))
        self.assertEqual({"k": "v", leases.DURATION_KEY: "2h"}, extras[0])
        two_hours = datetime.timedelta(hours=2)
        self.assertLessEqual(before + two_hours, end + datetime.timedelta(
            seconds=1))
        self.assertLessEqual(end, leases.utcnow() + two_hours
                             + datetime.timedelta(seconds=1))

    def test_explain_options(self) -> None:
        code, out, _ = self.run_cli(
            "explain", "--resource-class", "rc", "--trait", "CUSTOM_A",
            "--candidate-node", "n1", "--owner", "p", "--shard", "s",
            "-f", "value")
        self.assertEqual(0, code)
        self.assertEqual("resource_class 1 False\n", out)
        self.assertEqual([("explain", (AllocationRequest(
            "rc", traits=("CUSTOM_A",), candidate_nodes=("n1",), owner="p",
            constraints=Constraints(shard="s")),), {})], self.client.calls)

    def test_one_waited_create_asks_the_server_to_hold_the_answer(
            self) -> None:
        for wait, limit in (("30", 30.0), ("3", 3.0), ("0", None)):
            self.client.calls.clear()
            code, _, _ = self.run_cli("create", "--resource-class", "rc",
                                      "--wait", wait, "-f", "value")
            self.assertEqual(0, code)
            self.assertEqual(["create_allocation", "wait_for_allocation"],
                             self.client.names())
            create, wait_call = (c[2] for c in self.client.calls)
            # The hold is capped by the SDK to what is left of the budget
            # that the create and the wait share.
            self.assertEqual(10.0, create["prefer_wait"], wait)
            self.assertIs(create["deadline"], wait_call["deadline"])
            self.assertEqual(limit, create["deadline"].seconds)

    def test_count_waits_for_all_at_once(self) -> None:
        code, out, _ = self.run_cli("create", "--resource-class", "rc",
                                    "--count", "3", "--wait", "30",
                                    "-f", "value", "-c", "uuid")
        self.assertEqual(0, code)
        self.assertEqual(["u1", "u2", "u3"], out.split())
        self.assertEqual(["create_allocation"] * 3 + ["wait_for_allocations"],
                         self.client.names())
        self.assertEqual(30.0, self.client.calls[-1][2]["deadline"].seconds)
        # Created back to back, not each held until it settled.
        self.assertEqual([None] * 3, [kw["prefer_wait"]
                                      for _, _, kw in self.client.calls[:3]])

    def test_list_options(self) -> None:
        self.client.listed = [_alloc("u1", name="a")]
        code, out, _ = self.run_cli(
            "list", "--limit", "0", "--sort", "name:desc", "--fields",
            "uuid", "name", "--page-size", "5", "--marker", "m", "--state",
            "active", "--resource-class", "rc", "--node", "n", "--owner",
            "o", "-f", "json")
        self.assertEqual(0, code)
        self.assertEqual([{"uuid": "u1", "name": "a"}], json.loads(out))
        self.assertEqual({
            "state": "active", "resource_class": "rc", "node": "n",
            "owner": "o", "fields": ["uuid", "name"], "limit": None,
            "marker": "m", "sort_key": "name", "sort_dir": "desc",
            "page_size": 5, "expired": None, "group": None,
        }, self.client.calls[0][2])

    def test_set_and_unset(self) -> None:
        self.assertEqual(0, self.run_cli("set", "a", "--name", "b",
                                         "--extra", "k=v")[0])
        self.assertEqual(0, self.run_cli("unset", "a", "--name",
                                         "--extra", "k")[0])
        self.assertEqual([
            ("update_allocation", ("a",),
             {"name": "b", "set_extra": {"k": "v"}}),
            ("update_allocation", ("a",),
             {"name": None, "unset_extra": ("k",)}),
        ], self.client.calls)

    def test_get_and_show_are_the_same(self) -> None:
        outputs = [self.run_cli(verb, "a", "-f", "json")[1]
                   for verb in ("get", "show")]
        self.assertEqual(outputs[0], outputs[1])
        self.assertEqual("a", json.loads(outputs[0])["uuid"])


class TestScriptPromises(CommandTestCase):
    def test_output_shape_depends_on_count_not_on_n(self) -> None:
        _, single, _ = self.run_cli("create", "--resource-class", "rc",
                                    "-f", "json")
        _, one, _ = self.run_cli("create", "--resource-class", "rc",
                                 "--count", "1", "-f", "json")
        _, two, _ = self.run_cli("create", "--resource-class", "rc",
                                 "--count", "2", "-f", "json")
        self.assertIsInstance(json.loads(single), dict)
        self.assertEqual(1, len(json.loads(one)))
        self.assertEqual(2, len(json.loads(two)))

    def test_partial_count_prints_every_allocation(self) -> None:
        results = [_alloc("u1", node_uuid="n1"),
                   _alloc("u2", "error", last_error="no more nodes")]
        self.client.wait_error = exceptions.AllocationFailed(
            results[1], "no more nodes", results=results)
        code, out, err = self.run_cli("create", "--resource-class", "rc",
                                      "--count", "2", "--wait", "-f", "json")
        self.assertEqual(1, code)
        self.assertEqual([("u1", "active"), ("u2", "error")],
                         [(a["uuid"], a["state"]) for a in json.loads(out)])
        self.assertIn("Allocation u2 failed: no more nodes", err)
        self.assertIn("allocations left: u1 u2", err)

    def test_delete_on_failure_without_wait_is_a_usage_error(self) -> None:
        code, _, err = self.run_cli("create", "--resource-class", "rc",
                                    "--delete-on-failure")
        self.assertEqual(2, code)
        self.assertIn("--delete-on-failure needs --wait", err)
        self.assertEqual([], self.client.calls)

    def test_delete_ignore_missing_says_so(self) -> None:
        self.client.missing = {"nope"}
        code, out, _ = self.run_cli("delete", "nope", "--ignore-missing")
        self.assertEqual(0, code)
        self.assertEqual("Allocation nope not found; nothing to delete\n",
                         out)

    def test_bad_state_and_trait_are_usage_errors(self) -> None:
        for argv, text in (
            (("list", "--state", "bogus"), "allocating, active, error"),
            (("create", "--resource-class", "rc", "--trait", "gpu"),
             "CUSTOM_ followed by capital letters"),
        ):
            code, _, err = self.run_cli(*argv)
            self.assertEqual(2, code, argv)
            self.assertIn(text, err)
        self.assertEqual([], self.client.calls)

    def test_several_sort_keys(self) -> None:
        self.client.listed = [_alloc("u1", name="b"), _alloc("u2", name="a"),
                              _alloc("u3", "error", name="a")]
        code, out, _ = self.run_cli("list", "--sort", "name:desc,state",
                                    "-f", "value", "-c", "uuid")
        self.assertEqual(0, code)
        self.assertEqual(["u1", "u2", "u3"], out.split())
        kw = self.client.calls[0][2]
        self.assertEqual(("name", "desc"), (kw["sort_key"], kw["sort_dir"]))
