"""Request threads: the most recently idle one serves the next request."""

from __future__ import annotations

import threading
import time

import testtools
from waitress.task import ThreadedTaskDispatcher

from baremetal_allocclient.server.frontend.dispatch import (
    MostRecentFirst,
    RequestThreads,
)

THREADS = 4


class _Task:
    """What waitress's dispatcher runs: records the thread serving it."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.thread: int | None = None

    def service(self) -> None:
        self.thread = threading.get_ident()
        self.done.set()

    def cancel(self) -> None:
        self.done.set()


def _serving_threads(dispatcher: ThreadedTaskDispatcher) -> list[int]:
    """The threads serving 12 requests sent one after another."""
    dispatcher.set_thread_count(THREADS)
    try:
        deadline = time.monotonic() + 10
        while dispatcher.active_count and time.monotonic() < deadline:
            time.sleep(0.01)  # until every thread waits
        served = []
        for _ in range(12):
            task = _Task()
            dispatcher.add_task(task)  # type: ignore[arg-type]
            assert task.done.wait(10)
            assert task.thread is not None
            served.append(task.thread)
            time.sleep(0.01)  # its thread is idle again
        return served
    finally:
        dispatcher.shutdown(timeout=10)


class RequestThreadTests(testtools.TestCase):

    def test_a_stream_of_requests_stays_on_one_thread(self) -> None:
        served = _serving_threads(RequestThreads())
        self.assertEqual(1, len(set(served)), served)

    def test_waitress_alone_takes_every_thread_in_turn(self) -> None:
        # What the above changes (and so what it checks).
        served = _serving_threads(ThreadedTaskDispatcher())
        self.assertEqual(THREADS, len(set(served)), served)

    def test_notify_all_still_wakes_every_waiter(self) -> None:
        condition = MostRecentFirst()
        woken: list[bool] = []

        def wait() -> None:
            with condition:
                woken.append(condition.wait(10))

        threads = [threading.Thread(target=wait) for _ in range(THREADS)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with condition:
                if condition.waiting() == THREADS:
                    condition.notify_all()
                    break
            time.sleep(0.01)
        for thread in threads:
            thread.join(10)
        self.assertEqual([True] * THREADS, woken)

    def _start_waiting_in_turn(self, condition: MostRecentFirst,
                               woken: list[int]) -> list[threading.Thread]:
        """THREADS threads waiting on ``condition``, begun in the order
        0, 1, 2...; each appends its number to ``woken`` once woken."""
        threads = []
        for number in range(THREADS):
            def wait(number: int = number) -> None:
                with condition:
                    if condition.wait(10):
                        woken.append(number)
            thread = threading.Thread(target=wait)
            thread.start()
            threads.append(thread)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:  # waiting before the next
                with condition:
                    if condition.waiting() == number + 1:
                        break
                time.sleep(0.001)
        return threads

    def test_notify_wakes_the_thread_that_began_waiting_last(self) -> None:
        condition = MostRecentFirst()
        woken: list[int] = []
        threads = self._start_waiting_in_turn(condition, woken)
        for count in range(1, THREADS + 1):
            with condition:
                condition.notify()
            deadline = time.monotonic() + 10
            while len(woken) < count and time.monotonic() < deadline:
                time.sleep(0.001)
        for thread in threads:
            thread.join(10)
        self.assertEqual(list(reversed(range(THREADS))), woken)

    def test_notify_n_wakes_the_n_newest(self) -> None:
        condition = MostRecentFirst()
        woken: list[int] = []
        threads = self._start_waiting_in_turn(condition, woken)
        with condition:
            condition.notify(2)
        for thread in threads[-2:]:
            thread.join(10)
        with condition:
            self.assertEqual(THREADS - 2, condition.waiting())
            self.assertEqual({THREADS - 1, THREADS - 2}, set(woken))
            condition.notify_all()
        for thread in threads:
            thread.join(10)
        self.assertEqual(set(range(THREADS)), set(woken))

    def test_a_wait_that_times_out_is_no_longer_waiting(self) -> None:
        condition = MostRecentFirst()
        with condition:
            self.assertFalse(condition.wait(0.01))
            self.assertFalse(condition.wait(0))
            self.assertEqual(0, condition.waiting())
            condition.notify()  # (nobody to wake)

    def test_without_the_lock_refused(self) -> None:
        condition = MostRecentFirst()
        self.assertRaises(RuntimeError, condition.notify)
        self.assertRaises(RuntimeError, condition.wait, 1)

    def test_on_the_dispatchers_lock(self) -> None:
        dispatcher = RequestThreads()
        with dispatcher.lock:
            self.assertFalse(dispatcher.queue_cv.wait(0.01))
