"""The pure group rules shared by the SDK, the CLI and the server."""

from __future__ import annotations

import testtools

from baremetal_allocclient import groups
from baremetal_allocclient.tests.functional.faults import _invariants


def _marks(name: str, size: int) -> dict[str, object]:
    return {groups.GROUP_KEY: name, groups.SIZE_KEY: str(size)}


class GroupRulesTest(testtools.TestCase):

    def test_members_are_named_after_the_group(self) -> None:
        self.assertEqual(["ci-0", "ci-1", "ci-2"],
                         groups.member_names("ci", 3))
        self.assertEqual([None, None], groups.member_names(None, 2))

    def test_marks_are_added_to_the_callers_extra(self) -> None:
        self.assertEqual({"job": "1", **_marks("ci", 2)},
                         groups.member_extra({"job": "1"}, "ci", 2))
        self.assertIsNone(groups.member_extra(None, None, 2))
        self.assertEqual("ci", groups.group_of(_marks("ci", 2)))
        self.assertIsNone(groups.group_of({groups.GROUP_KEY: 3}))
        self.assertIsNone(groups.size_of({groups.SIZE_KEY: True}))
        # Every value a string; what older versions wrote is read too.
        self.assertEqual({"job": "1", groups.GROUP_KEY: "ci",
                          groups.SIZE_KEY: "2"},
                         groups.member_extra({"job": "1"}, "ci", 2))
        self.assertTrue(groups.GROUP_KEY.startswith(groups.PREFIX))
        self.assertTrue(groups.SIZE_KEY.startswith(groups.PREFIX))
        legacy = {groups.LEGACY_GROUP_KEY: "old",
                  groups.LEGACY_SIZE_KEY: 3}
        self.assertEqual(("old", 3), (groups.group_of(legacy),
                                      groups.size_of(legacy)))
        self.assertIsNone(groups.size_of({groups.SIZE_KEY: "2x"}))

    def test_invalid_sizes_and_names_are_refused(self) -> None:
        for count in (0, -1, groups.MAX_SIZE + 1, True, 1.5):
            self.assertRaises(groups.GroupError, groups.check, count, None)
        for name in ("", "a b", "a/b", "x" * (groups.MAX_NAME + 1), "\0"):
            self.assertRaises(groups.GroupError, groups.check, 2, name)
        groups.check(groups.MAX_SIZE, "x" * groups.MAX_NAME)

    def test_a_member_name_stays_within_ironics_limit(self) -> None:
        longest = groups.member_names("x" * groups.MAX_NAME,
                                      groups.MAX_SIZE)[-1]
        assert longest is not None
        self.assertLessEqual(len(longest), 255)

    def test_incomplete_groups(self) -> None:
        whole = [("a", _marks("g", 2), "active"),
                 ("b", _marks("g", 2), "active"),
                 ("c", None, "error")]
        self.assertEqual({}, groups.incomplete_groups(whole))
        self.assertEqual({"g": "1 of 2 members exist"},
                         groups.incomplete_groups(whole[:1]))
        self.assertEqual(
            {"g": "members in states ['active', 'error']"},
            groups.incomplete_groups([whole[0],
                                      ("b", _marks("g", 2), "error")]))
        self.assertIn("disagree", groups.incomplete_groups(
            [whole[0], ("b", _marks("g", 3), "active")])["g"])

    def test_distinct_nodes(self) -> None:
        self.assertTrue(groups.distinct_nodes(["n1", "n2"]))
        self.assertFalse(groups.distinct_nodes(["n1", "n1"]))
        self.assertFalse(groups.distinct_nodes(["n1", None]))

    def test_the_invariant_checker_reports_a_partial_group(self) -> None:
        def row(uuid: str, state: str) -> _invariants.AllocationRow:
            return _invariants.AllocationRow(
                1, uuid, None, None, state, "rc", (), (), None, None,
                {}, {}, marks=_marks("g", 2))
        snapshot = _invariants.Snapshot({}, {1: row("u1", "active")})
        self.assertEqual(["group g is partial: 1 of 2 members exist"],
                         _invariants.whole_groups(snapshot))
