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
                if len(condition._waiters) == THREADS:  # type: ignore
                    condition.notify_all()
                    break
            time.sleep(0.01)
        for thread in threads:
            thread.join(10)
        self.assertEqual([True] * THREADS, woken)
