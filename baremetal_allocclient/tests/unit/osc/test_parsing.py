"""Argument types and cross-option checks of the allocation commands."""

from __future__ import annotations

import argparse

import testtools

from baremetal_allocclient.osc.v1 import columns, parsing


class TestArgumentTypes(testtools.TestCase):
    def test_key_value(self) -> None:
        self.assertEqual(("k", "v"), parsing.key_value("k=v"))
        self.assertEqual(("k", "a=b"), parsing.key_value("k=a=b"))
        self.assertEqual(("k", ""), parsing.key_value("k="))
        for bad in ("novalue", "=v", " =v"):
            self.assertRaises(
                argparse.ArgumentTypeError, parsing.key_value, bad
            )

    def test_integers(self) -> None:
        self.assertEqual(3, parsing.positive_int("3"))
        self.assertEqual(0, parsing.non_negative_int("0"))
        self.assertEqual(1000, parsing.allocation_count("1000"))
        for func, bad in (
            (parsing.allocation_count, "1001"),
            (parsing.allocation_count, "100000000000"),
            (parsing.allocation_count, "0"),
            (parsing.positive_int, "0"),
            (parsing.positive_int, "x"),
            (parsing.non_negative_int, "-1"),
            (parsing.non_negative_int, "1.5"),
        ):
            self.assertRaises(argparse.ArgumentTypeError, func, bad)

    def test_wait_timeout(self) -> None:
        self.assertEqual(0.0, parsing.wait_timeout("0"))
        self.assertEqual(2.5, parsing.wait_timeout("2.5"))
        for bad in ("-1", "soon", "inf", "nan"):
            self.assertRaises(
                argparse.ArgumentTypeError, parsing.wait_timeout, bad
            )

    def test_positive_seconds(self) -> None:
        """``--poll-interval`` and the request ``--timeout``: more than
        0, finite (NaN, -1 and 1e400 reached the HTTP library before)."""
        self.assertEqual(2.5, parsing.positive_seconds("2.5"))
        self.assertEqual(300.0, parsing.positive_seconds("5m"))
        for bad in ("0", "-1", "nan", "1e400", "inf", "x"):
            self.assertRaises(argparse.ArgumentTypeError,
                              parsing.positive_seconds, bad)

    def test_one_duration_syntax_for_wait_and_lease(self) -> None:
        """--wait takes --lease's durations; --lease takes bare seconds."""
        for text, seconds in (("5s", 5), ("2m", 120), ("1h30m", 5400),
                              ("1d", 86400), ("90", 90)):
            self.assertEqual(seconds, parsing.wait_timeout(text), text)
            self.assertEqual(
                seconds, parsing.lease_duration(text).total_seconds(), text)
        for bad in ("5x", "1h1h", "-5s"):
            for func in (parsing.wait_timeout, parsing.lease_duration):
                error = self.assertRaises(argparse.ArgumentTypeError,
                                          func, bad)
                self.assertIn("90s, 30m, 2h, 1d or 1h30m", str(error))

    def test_non_empty(self) -> None:
        self.assertEqual("a", parsing.non_empty("a"))
        self.assertRaises(argparse.ArgumentTypeError, parsing.non_empty, " ")

    def test_sort(self) -> None:
        sort = parsing.SortType(columns.SORTABLE)
        self.assertEqual([("uuid", None)], sort("uuid"))
        self.assertEqual([("name", "desc")], sort("name:DESC"))
        self.assertEqual([("created_at", "asc")], sort("created_at:asc"))
        # Several keys, as python-ironicclient's --sort accepts them.
        self.assertEqual([("name", "desc"), ("state", None)],
                         sort("name:desc,state"))
        for bad in ("traits", "extra", "bogus", "uuid:up", "name,name"):
            self.assertRaises(argparse.ArgumentTypeError, sort, bad)

    def test_trait_rule_is_spelled_out(self) -> None:
        for good in ("CUSTOM_GPU", "HW_CPU_X86_AVX2"):
            self.assertEqual(good, parsing.trait(good))
        for bad in ("gpu", "custom_gpu", "CUSTOM_", "CUSTOM-GPU", ""):
            error = self.assertRaises(argparse.ArgumentTypeError,
                                      parsing.trait, bad)
            self.assertIn("CUSTOM_ followed by capital letters", str(error))

    def test_state_is_checked(self) -> None:
        self.assertEqual("active", parsing.allocation_state("active"))
        error = self.assertRaises(argparse.ArgumentTypeError,
                                  parsing.allocation_state, "bogus")
        self.assertIn("allocating, active, error", str(error))

    def test_shell_format_is_one_record_only(self) -> None:
        problem = parsing.create_arguments_problem(
            resource_class="rc", node=None, count=1, name=None, uuid=None,
            output_format="shell", listed=True)
        self.assertIn("-f shell describes one allocation", problem or "")

    def test_delete_on_failure_needs_wait(self) -> None:
        problem = parsing.create_arguments_problem(
            resource_class="rc", node=None, count=1, name=None, uuid=None,
            output_format="table", wait=None, delete_on_failure=True)
        self.assertIn("--delete-on-failure needs --wait", problem or "")

    def test_fields(self) -> None:
        fields = parsing.FieldsType(columns.ALL)
        self.assertEqual(["uuid", "state"], fields("uuid,state"))
        self.assertEqual(["uuid"], fields("uuid,"))
        for bad in ("", ",", "uuid,bogus", "links"):
            self.assertRaises(argparse.ArgumentTypeError, fields, bad)

    def test_flatten_fields_keeps_order_without_repeats(self) -> None:
        self.assertEqual(
            ["name", "uuid", "state"],
            parsing.flatten_fields([["name", "uuid"], ["uuid", "state"]]),
        )
        self.assertEqual([], parsing.flatten_fields(None))

    def test_merge_key_values_last_wins(self) -> None:
        self.assertEqual(
            {"a": "2", "b": "1"},
            parsing.merge_key_values([("a", "1"), ("b", "1"), ("a", "2")]),
        )


class TestCreateArgumentsProblem(testtools.TestCase):
    def problem(self, **kw: object) -> str | None:
        args: dict[str, object] = {
            "resource_class": "rc",
            "node": None,
            "count": 1,
            "name": None,
            "uuid": None,
            "output_format": "table",
        }
        args.update(kw)
        return parsing.create_arguments_problem(**args)  # type: ignore

    def test_consistent_command_lines(self) -> None:
        for kw in (
            {},
            {"resource_class": None, "node": "n1"},
            {"count": 3},
            {"count": 1, "name": "x", "output_format": "shell"},
            {"wait_for_capacity": True, "wait": 0.0},
            {"wait_for_capacity": True, "wait": 30.0, "count": 3},
        ):
            self.assertIsNone(self.problem(**kw), kw)

    def test_inconsistent_command_lines(self) -> None:
        cases = [
            ({"resource_class": None}, "--resource-class"),
            ({"count": 2, "name": "x"}, "--name"),
            ({"count": 2, "uuid": "u"}, "--uuid"),
            ({"count": 2, "node": "n"}, "--node"),
            ({"count": 2, "output_format": "shell"}, "shell"),
            ({"wait_for_capacity": True}, "--wait-for-capacity needs --wait"),
            ({"wait_for_capacity": True, "wait": 5.0, "node": "n",
              "resource_class": None}, "backfill"),
        ]
        for kw, mentioned in cases:
            problem = self.problem(**kw)
            self.assertIsNotNone(problem, kw)
            self.assertIn(mentioned, str(problem))


class TestLeaseDuration(testtools.TestCase):
    def test_durations_and_usage_errors(self) -> None:
        import datetime

        self.assertEqual(datetime.timedelta(hours=1, minutes=30),
                         parsing.lease_duration("1h30m"))
        for bad in ("2x", "", "0s", "1000d"):
            error = self.assertRaises(argparse.ArgumentTypeError,
                                      parsing.lease_duration, bad)
            self.assertIn("lease", str(error))
