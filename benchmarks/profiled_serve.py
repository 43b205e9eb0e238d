"""``baremetal-alloc-server`` with every thread under cProfile.

For ``benchmarks.floor --profile`` only (py-spy is not required): the same
command line, with each thread the server starts (waitress's I/O and
request threads, the allocation workers, the heartbeat...) run under its
own :class:`cProfile.Profile` timed by that thread's CPU clock, so that
waiting on a lock or a socket costs nothing and the figures are CPU.
When ``serve`` returns (SIGTERM), the profiles of every thread are added
up and written, in :mod:`pstats` format, to the file named by the
environment variable ``BENCH_PROFILE_OUT``; on SIGUSR1, the same so far
to that name plus ``.warm`` (the benchmark sends it after its warm-up and
subtracts that).  The main thread (start-up, migrations check) is not
profiled.

cProfile slows the profiled code down by a factor of two or so; the
shares of the functions, not their times, are what it is for.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import signal
import sys
import threading
import time
from typing import Any

OUT_ENV = "BENCH_PROFILE_OUT"
WARM_SUFFIX = ".warm"
PROFILES: list[cProfile.Profile] = []
_LOCK = threading.Lock()
_THREAD_RUN = threading.Thread.run


def _profiled_run(self: threading.Thread) -> None:
    profile = cProfile.Profile(time.thread_time_ns, 1e-9)
    with _LOCK:
        PROFILES.append(profile)
    profile.enable()
    try:
        _THREAD_RUN(self)
    finally:
        profile.disable()


class _Snapshot:
    """What :class:`pstats.Stats` loads: the statistics of one profile so
    far (its thread may still be running; the GIL keeps the read whole)."""

    def __init__(self, profile: cProfile.Profile) -> None:
        profile.snapshot_stats()
        self.stats: dict[Any, Any] = profile.stats

    def create_stats(self) -> None:
        """Already created by the constructor."""


def dump(path: str) -> None:
    """Every thread's profile, added up, to ``path``."""
    with _LOCK:
        snapshots = [_Snapshot(profile) for profile in PROFILES]
    if not snapshots:
        return
    stats = pstats.Stats(snapshots[0])  # type: ignore[arg-type]
    for snapshot in snapshots[1:]:
        stats.add(snapshot)  # type: ignore[arg-type]
    stats.dump_stats(path)


def main() -> int:
    threading.Thread.run = _profiled_run  # type: ignore[method-assign]
    out = os.environ[OUT_ENV]
    signal.signal(signal.SIGUSR1, lambda _n, _f: dump(out + WARM_SUFFIX))
    from baremetal_allocclient.server import cmd

    try:
        return cmd.main()
    finally:
        dump(out)


if __name__ == "__main__":
    sys.exit(main())
