"""The serving process's memory, set up once start-up is over.

* What start-up made (modules, the schema, the API's schemas and routes)
  lives as long as the process: it is left out of the garbage
  collector's full passes (``gc.freeze``), each of which scanned all of
  it (40 ms on the development machine, about once every 2,000
  creates), a pause for whichever request triggered it.  Younger objects
  are collected as before.
* A large answer (a page of 1,000 allocations is 0.6 MB of JSON, built
  as text, then as bytes) took its memory from fresh ``mmap`` regions,
  or from a heap whose freed top glibc had just given back, so every
  such answer faulted its pages in again: about 230 minor page faults
  each, an eighth of its CPU.  With glibc, buffers below
  :data:`MMAP_THRESHOLD` come from the heap, and up to :data:`TOP_PAD`
  bytes stay free at its top (``mallopt``).  That is per malloc arena:
  each request thread that has served a large answer may keep one (glibc
  makes at most 8 per CPU), so after a burst of large answers on many
  threads the process keeps up to that many times :data:`TOP_PAD` more;
  a steady stream stays on one or two threads
  (``frontend/dispatch.py``).  Other C libraries are left alone:
  ``mallopt`` is glibc's (public, but glibc's only), looked up through
  ``ctypes``; where it is missing or refuses a setting, large answers
  fault their memory in as before, and nothing else changes
  (``unit/server/test_heap.py`` runs both, and names ``mallopt``).
"""

from __future__ import annotations

import ctypes
import gc
import logging

LOG = logging.getLogger(__name__)

#: Allocations from this size on get their own ``mmap`` (glibc's default
#: is 128 KB, raised by itself as large blocks are freed).
MMAP_THRESHOLD = 16 * 1024 * 1024
#: Free bytes kept at the top of each heap: more than a list's largest
#: page takes while it is built and sent (about 2 MB).
TOP_PAD = 8 * 1024 * 1024
# glibc's <malloc.h>
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3


def start_up_over() -> None:
    """Freeze what start-up made, and keep heap memory (see above)."""
    gc.collect()
    gc.freeze()
    keep_heap_memory()


def keep_heap_memory() -> bool:
    """Set :data:`MMAP_THRESHOLD` and :data:`TOP_PAD`; False where the C
    library has no ``mallopt`` or refuses them."""
    try:  # the C library the interpreter runs on (no search for it)
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    if (mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) != 1
            or mallopt(_M_TOP_PAD, TOP_PAD) != 1):
        LOG.debug("mallopt refused: large answers fault their memory in")
        return False
    return True
