"""Lease durations, the recorded expiry and the expiry decision (pure)."""

from __future__ import annotations

import datetime

import testtools
from hypothesis import given
from hypothesis import strategies as st

from baremetal_allocclient import leases
from baremetal_allocclient.leases import Action, NodeFacts

UTC = datetime.timezone.utc
NOW = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
PAST = {leases.EXPIRES_KEY: "2030-01-02T03:04:05Z"}  # == NOW: ended
FUTURE = {leases.EXPIRES_KEY: "2030-01-02T03:04:06Z"}


class TestDurations(testtools.TestCase):
    def test_accepted_durations(self) -> None:
        td = datetime.timedelta
        for text, expected in (
            ("90s", td(seconds=90)), ("30m", td(minutes=30)),
            ("2h", td(hours=2)), ("1d", td(days=1)),
            ("1h30m", td(hours=1, minutes=30)),
            ("1d12h", td(days=1, hours=12)),
            ("1d2h3m4s", td(days=1, hours=2, minutes=3, seconds=4)),
            (" 2H ", td(hours=2)), ("366d", td(days=366)),
            ("0h1s", td(seconds=1)), ("2", td(seconds=2)),
            ("5400", td(hours=1, minutes=30)),
        ):
            self.assertEqual(expected, leases.parse_duration(text), text)

    def test_refused_durations_say_what_is_expected(self) -> None:
        for text in ("", "0", "h", "2x", "-1h", "1.5h", "30m1h", "1h1h",
                     "0s", "0d0h", "367d", "1 h", "2h 30m", "1e3s",
                     "9999999d", "\uff11h", "2h\x00"):
            error = self.assertRaises(leases.LeaseError,
                                      leases.parse_duration, text)
            self.assertTrue(str(error), text)
        error = self.assertRaises(leases.LeaseError,
                                  leases.parse_duration, "2x")
        self.assertIn("90s, 30m, 2h, 1d or 1h30m", str(error))
        self.assertIn("at most 366d",
                      str(self.assertRaises(leases.LeaseError,
                                            leases.parse_duration, "367d")))

    def test_timedelta_leases_are_checked_too(self) -> None:
        self.assertEqual(datetime.timedelta(hours=1),
                         leases.as_duration(datetime.timedelta(hours=1)))
        for bad in (datetime.timedelta(0), datetime.timedelta(seconds=-1),
                    datetime.timedelta(days=400)):
            self.assertRaises(leases.LeaseError, leases.as_duration, bad)

    @given(st.integers(min_value=1, max_value=366 * 86400))
    def test_format_then_parse_is_identity(self, seconds: int) -> None:
        duration = datetime.timedelta(seconds=seconds)
        text = leases.format_duration(duration)
        self.assertEqual(duration, leases.parse_duration(text))

    @given(st.text(max_size=12))
    def test_anything_parses_or_raises_lease_error(self, text: str) -> None:
        try:
            duration = leases.parse_duration(text)
        except leases.LeaseError:
            return
        self.assertGreater(duration, datetime.timedelta(0))
        self.assertLessEqual(duration, leases.MAX_DURATION)


class TestRecordedExpiry(testtools.TestCase):
    def test_lease_extra_rounds_the_end_up_to_whole_seconds(self) -> None:
        now = NOW + datetime.timedelta(microseconds=1)
        self.assertEqual(
            {leases.EXPIRES_KEY: "2030-01-02T05:04:06Z",
             leases.DURATION_KEY: "2h"},
            leases.lease_extra("2h", now))

    def test_with_lease_keeps_other_keys(self) -> None:
        self.assertEqual({"a": "b", **leases.lease_extra("1m", NOW)},
                         leases.with_lease({"a": "b"}, "1m", NOW))
        self.assertEqual({"a": "b"}, leases.with_lease({"a": "b"}, None,
                                                       NOW))
        self.assertIsNone(leases.with_lease(None, None, NOW))

    def test_expiry_reads_utc_offsets_and_naive_values(self) -> None:
        for text in ("2030-01-02T03:04:05Z", "2030-01-02T03:04:05+00:00",
                     "2030-01-02T04:04:05+01:00", "2030-01-02T03:04:05"):
            self.assertEqual(
                NOW, leases.expires_at({leases.EXPIRES_KEY: text}), text)

    def test_expired_at_the_recorded_second(self) -> None:
        self.assertTrue(leases.is_expired(PAST, NOW))
        self.assertFalse(leases.is_expired(FUTURE, NOW))

    def test_no_lease_or_an_unreadable_one_never_expires(self) -> None:
        for extra in (None, {}, {"other": "x"},
                      {leases.EXPIRES_KEY: "tomorrow"},
                      {leases.EXPIRES_KEY: 12}):
            self.assertFalse(leases.is_expired(extra, NOW), extra)
        self.assertRaises(leases.LeaseError, leases.expires_at,
                          {leases.EXPIRES_KEY: "tomorrow"})


class TestDecide(testtools.TestCase):
    def test_table(self) -> None:
        available = NodeFacts("available")
        for state, extra, node, undeploy, expected in (
            ("active", FUTURE, available, False, Action.KEEP),
            ("active", {}, available, False, Action.KEEP),
            ("active", PAST, available, False, Action.RELEASE),
            ("active", PAST, NodeFacts("manageable"), False, Action.RELEASE),
            ("error", PAST, None, False, Action.RELEASE),
            ("allocating", PAST, None, False, Action.BUSY),
            ("active", PAST, NodeFacts("active"), False, Action.DEPLOYED),
            ("active", PAST, NodeFacts("active"), True, Action.UNDEPLOY),
            ("active", PAST, NodeFacts("deploy failed"), True,
             Action.UNDEPLOY),
            ("active", PAST, NodeFacts("deploying", "active"), True,
             Action.DEPLOYED),
            ("active", PAST, NodeFacts("wait call-back", "active"), False,
             Action.DEPLOYED),
            ("active", PAST, NodeFacts("cleaning", "available"), False,
             Action.BUSY),
            ("active", PAST, NodeFacts("deleting", "available"), True,
             Action.BUSY),
        ):
            self.assertEqual(
                expected,
                leases.decide(state, extra, node, NOW, undeploy=undeploy),
                (state, extra, node, undeploy))
