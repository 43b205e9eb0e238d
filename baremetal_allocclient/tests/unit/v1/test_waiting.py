"""The poll schedule and the wait loops, with a fake clock and source."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import testtools

from baremetal_allocclient import exceptions
from baremetal_allocclient.tests.unit.v1 import fakes
from baremetal_allocclient.v1 import Allocation, waiting


class ScheduleTest(testtools.TestCase):

    def test_default_schedule(self) -> None:
        self.assertEqual([0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0],
                         list(itertools.islice(waiting.poll_schedule(), 8)))

    def test_custom_schedule(self) -> None:
        self.assertEqual([1.0, 1.5, 1.5], list(itertools.islice(
            waiting.poll_schedule(1.0, 3.0, 1.5), 3)))
        for args in ((0, 2, 2), (0.1, 0.5, 2), (0.1, 2, 0)):
            self.assertRaises(exceptions.InvalidArgument, next,
                              waiting.poll_schedule(*args))


def _alloc(uuid: str, state: str = "allocating", rc: str | None = "rc",
           last_error: str | None = None) -> Allocation:
    return Allocation(uuid=uuid, state=state, resource_class=rc,
                      last_error=last_error)


class WaitOneTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.clock = fakes.FakeClock()

    def _wait(self, states: Sequence[Allocation], **kwargs: object
              ) -> Allocation:
        answers = iter(states)
        return waiting.wait_for_allocation(
            lambda: next(answers), _alloc("a1"), clock=self.clock,
            sleep=self.clock.sleep, **kwargs)  # type: ignore[arg-type]

    def test_active(self) -> None:
        done = self._wait([_alloc("a1"), _alloc("a1", "active")])
        self.assertEqual("active", done.state)
        self.assertEqual([0.05, 0.1], self.clock.sleeps)

    def test_already_active_costs_nothing(self) -> None:
        done = waiting.wait_for_allocation(
            lambda: self.fail("no poll expected"), _alloc("a1", "active"),
            clock=self.clock, sleep=self.clock.sleep)
        self.assertEqual("active", done.state)
        self.assertEqual([], self.clock.sleeps)

    def test_error(self) -> None:
        error = self.assertRaises(
            exceptions.AllocationFailed, self._wait,
            [_alloc("a1", "error", last_error="no match")])
        self.assertEqual("no match", error.last_error)

    def test_timeout_and_final_poll_at_deadline(self) -> None:
        polls: list[float] = []

        def get() -> Allocation:
            polls.append(self.clock.now)
            return _alloc("a1")

        error = self.assertRaises(
            exceptions.WaitTimeout, waiting.wait_for_allocation, get,
            _alloc("a1"), timeout=3.0, clock=self.clock,
            sleep=self.clock.sleep)
        self.assertEqual(3.0, error.timeout)
        self.assertEqual("allocating", error.last_state)
        # One last poll with budget.FINAL_POLL seconds left for it.
        self.assertAlmostEqual(1002.8, polls[-1])
        self.assertEqual([0.05, 0.1, 0.2, 0.4, 0.8, 1.25],
                         [round(s, 6) for s in self.clock.sleeps])

    def test_zero_timeout_checks_once(self) -> None:
        self.assertRaises(exceptions.WaitTimeout, self._wait, [],
                          timeout=0)
        self.assertEqual([], self.clock.sleeps)
        self.assertRaises(exceptions.InvalidArgument, self._wait, [],
                          timeout=-1)

    def test_progress_and_custom_schedule(self) -> None:
        seen: list[waiting.Progress] = []
        self._wait([_alloc("a1"), _alloc("a1", "active")],
                   on_progress=seen.append, schedule=[1.0, 1.0])
        self.assertEqual([1.0, 1.0], self.clock.sleeps)
        self.assertEqual([0.0, 1.0], [p.elapsed for p in seen])
        self.assertEqual([(1, 0), (1, 0)],
                         [(p.pending, p.finished) for p in seen])


class FakeSource:
    """Counts the reads waiting makes; states come from a script."""

    def __init__(self, clock: fakes.FakeClock,
                 settle: dict[str, tuple[float, str, str]]) -> None:
        self.clock = clock
        self.settle = settle
        self.calls: list[tuple[str, object]] = []

    def _now(self, uuid: str) -> Allocation:
        when, final, rc = self.settle[uuid]
        state = final if self.clock.now >= when else "allocating"
        return _alloc(uuid, state, rc)

    def get(self, uuid: str) -> Allocation:
        self.calls.append(("get", uuid))
        return self._now(uuid)

    def allocating_uuids(self, resource_class: str | None) -> set[str]:
        self.calls.append(("list", resource_class))
        return {u for u in self.settle
                if self._now(u).state == "allocating"
                and resource_class in (None, self.settle[u][2])}

    def fetch_settled(self, allocations: Sequence[Allocation]
                      ) -> list[Allocation]:
        self.calls.append(("fetch", tuple(a.uuid for a in allocations)))
        return [self._now(str(a.uuid)) for a in allocations]


class WaitManyTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.clock = fakes.FakeClock()

    def _run(self, settle: dict[str, tuple[float, str, str]],
             **kwargs: object) -> tuple[FakeSource, list[Allocation]]:
        source = FakeSource(self.clock, {
            u: (self.clock.now + t, s, rc) for u, (t, s, rc) in
            settle.items()})
        initial = [_alloc(u, rc=rc) for u, (_t, _s, rc) in settle.items()]
        done = waiting.wait_for_allocations(
            source, initial, clock=self.clock, sleep=self.clock.sleep,
            **kwargs)  # type: ignore[arg-type]
        return source, done

    def test_one_list_per_round(self) -> None:
        settle = {f"a{i}": (0.1 * i, "active", "rc") for i in range(50)}
        source, done = self._run(settle)
        self.assertEqual(["active"] * 50, [a.state for a in done])
        lists = [c for c in source.calls if c[0] == "list"]
        rounds = len(self.clock.sleeps)
        # Exactly one list per round, narrowed to the common class,
        # until a single one is left, which is polled with GET.
        gets = [c for c in source.calls if c[0] == "get"]
        self.assertEqual(rounds, len(lists) + len(gets))
        self.assertEqual({("list", "rc")}, set(lists))
        fetches = [c for c in source.calls if c[0] == "fetch"]
        self.assertLessEqual(len(fetches), len(lists))
        fetched = sum(len(c[1]) for c in fetches)  # type: ignore[arg-type]
        # Each allocation is fetched once when it settles (the last one
        # may instead have been polled alone with GET).
        self.assertEqual(50, fetched + (1 if gets else 0))
        self.assertEqual(len(source.calls), rounds + len(fetches))

    def test_mixed_classes_are_not_narrowed(self) -> None:
        source, _done = self._run({"a": (0.1, "active", "rc1"),
                                   "b": (0.1, "active", "rc2")})
        self.assertEqual(("list", None), source.calls[0])

    def test_already_settled_costs_nothing(self) -> None:
        source = FakeSource(self.clock, {})
        done = waiting.wait_for_allocations(
            source, [_alloc("a", "active"), _alloc("b", "error")],
            raise_on_error=False, clock=self.clock, sleep=self.clock.sleep)
        self.assertEqual(["active", "error"], [a.state for a in done])
        self.assertEqual([], source.calls)

    def test_error_and_timeout(self) -> None:
        error = self.assertRaises(
            exceptions.AllocationFailed, self._run,
            {"a": (0.1, "error", "rc"), "b": (0.3, "active", "rc")})
        self.assertEqual("a", error.allocation.uuid)
        self.assertEqual(2, len(error.results))
        timeout = self.assertRaises(
            exceptions.WaitTimeout, self._run,
            {"c": (0.1, "active", "rc"), "d": (60, "active", "rc")},
            timeout=5.0)
        self.assertEqual(["d"], [a.uuid for a in timeout.allocations])
        self.assertEqual(["active", "allocating"],
                         [a.state for a in timeout.results])

    def test_needs_uuids(self) -> None:
        self.assertRaises(
            exceptions.InvalidArgument, waiting.wait_for_allocations,
            FakeSource(self.clock, {}), [Allocation(name="x")],
            clock=self.clock, sleep=self.clock.sleep)
