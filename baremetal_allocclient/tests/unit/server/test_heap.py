"""The serving process leaves what start-up made out of full garbage
collections (its large answers: ``functional/server/test_large_answers``).
"""

from __future__ import annotations

import gc
import platform
from unittest import mock

import testtools

from baremetal_allocclient.server import heap


def _in_oldest_generation(obj: object) -> bool:
    return any(o is obj for o in gc.get_objects(generation=2))


class StartUpHeapTests(testtools.TestCase):

    def test_start_up_objects_are_left_out_of_full_collections(self) -> None:
        self.addCleanup(gc.unfreeze)
        made_at_start_up = [[n] for n in range(5000)]  # (lists are tracked)
        gc.collect()  # every survivor is now in the oldest generation
        self.assertTrue(_in_oldest_generation(made_at_start_up[0]))

        heap.start_up_over()

        self.assertGreaterEqual(gc.get_freeze_count(), len(made_at_start_up))
        self.assertFalse(_in_oldest_generation(made_at_start_up[0]))
        self.assertFalse(_in_oldest_generation(made_at_start_up))
        # Made afterwards: collected as before.
        later = [[n] for n in range(10)]
        gc.collect()
        self.assertTrue(_in_oldest_generation(later[0]))


class _NoMallopt:
    """A C library without ``mallopt`` (musl's, macOS's)."""


class _Refusing:
    """A C library whose ``mallopt`` refuses every setting."""

    def __init__(self) -> None:
        self.mallopt = mock.Mock(return_value=0)


class MalloptTests(testtools.TestCase):
    """glibc's ``mallopt`` (public C API, but glibc's only), called
    through ``ctypes``; without it the server runs as before."""

    def test_glibc_mallopt_takes_both_settings(self) -> None:
        if platform.libc_ver()[0] != "glibc":
            self.skipTest("not glibc: no mallopt")
        # Fails by name where glibc's mallopt, or its M_TOP_PAD and
        # M_MMAP_THRESHOLD parameters, change.
        self.assertTrue(heap.keep_heap_memory(), "glibc mallopt refused")

    def test_without_mallopt_the_server_starts_as_before(self) -> None:
        self.addCleanup(gc.unfreeze)
        with mock.patch.object(heap.ctypes, "CDLL",
                               return_value=_NoMallopt()):
            self.assertFalse(heap.keep_heap_memory())
            heap.start_up_over()  # (no error: only the heap is not kept)
        self.assertGreater(gc.get_freeze_count(), 0)

    def test_a_refused_mallopt_is_not_an_error(self) -> None:
        library = _Refusing()
        with mock.patch.object(heap.ctypes, "CDLL", return_value=library):
            self.assertFalse(heap.keep_heap_memory())
        library.mallopt.assert_called_with(
            heap._M_MMAP_THRESHOLD, heap.MMAP_THRESHOLD)
