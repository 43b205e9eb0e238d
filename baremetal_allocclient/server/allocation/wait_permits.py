"""How many request threads may wait for allocations to settle at once
(``Prefer: wait`` on a create, ``api/prefer.py``).

A waiting request holds an HTTP thread; without a cap a burst of them
holds every thread and unrelated requests queue behind it.
"""

from __future__ import annotations

import threading


class WaitPermits:
    """How many request threads may be held by ``Prefer: wait`` at once.

    A waiting request holds an HTTP thread; without a cap a burst of
    them holds every thread and unrelated requests queue behind it.  A
    request that gets no permit is answered at once, which the
    preference allows (the response then has no ``Preference-Applied``).
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._used = 0
        self._lock = threading.Lock()

    def try_acquire(self) -> bool:
        """Take a permit without blocking; False when all are taken."""
        with self._lock:
            if self._used >= self.capacity:
                return False
            self._used += 1
            return True

    def release(self) -> None:
        """Give a permit back."""
        with self._lock:
            if self._used <= 0:
                raise RuntimeError("permit released more often than taken")
            self._used -= 1


def waiting_capacity(request_threads: int) -> int:
    """Request threads that may wait: half of them, at least one (pure)."""
    return max(1, request_threads // 2)
