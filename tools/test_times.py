"""What each test costs, so that stestr can share the suite out evenly.

stestr gives each worker whole test classes (``group_regex``), balanced by
the durations its repository recorded in earlier runs; a fresh clone has
none, and then it deals the classes out in turn, which left one of four
workers running four minutes after the others. ``tools/test-times.csv``
keeps each test's cost from a full run; ``tools/run-tests`` loads it into
a new repository before the first run (``seed``).

A test's cost here is its own time plus the pause before it on its worker
when it is the first of its class there: that pause is the class's
``setUpClass`` (a server, a database), which stestr's own timings leave
out but which the worker spends all the same.

    python tools/test_times.py record   # after a full run: update the file
    python tools/test_times.py seed     # what run-tests does on a new clone
"""

from __future__ import annotations

import csv
import datetime
import io
import os
import subprocess
import sys
from typing import Any

import subunit
import testtools

HERE = os.path.dirname(os.path.abspath(__file__))
TIMES = os.path.join(HERE, "test-times.csv")
STESTR = os.path.join(os.path.dirname(sys.executable), "stestr")
EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


class _Collector(testtools.StreamResult):
    """(worker, start, stop, test id) of each test in a subunit stream."""

    def __init__(self) -> None:
        super().__init__()
        self.started: dict[str, Any] = {}
        self.runs: list[tuple[str, Any, Any, str]] = []

    def status(self, test_id: str | None = None,
               test_status: str | None = None, test_tags: Any = None,
               timestamp: Any = None, **_: Any) -> None:
        if test_id is None or timestamp is None:
            return
        if test_status == "inprogress":
            self.started[test_id] = timestamp
        elif test_status in ("success", "fail", "skip", "xfail", "uxsuccess"):
            worker = next((t for t in test_tags or () if
                           t.startswith("worker-")), "worker-0")
            start = self.started.pop(test_id, timestamp)
            self.runs.append((worker, start, timestamp, test_id))


def costs(stream: bytes) -> dict[str, float]:
    """Seconds per test id, with its class's set-up on its first test."""
    collector = _Collector()
    subunit.ByteStreamToStreamResult(io.BytesIO(stream)).run(collector)
    found: dict[str, float] = {}
    by_worker: dict[str, list[tuple[Any, Any, str]]] = {}
    for worker, start, stop, test_id in collector.runs:
        by_worker.setdefault(worker, []).append((start, stop, test_id))
    for runs in by_worker.values():
        runs.sort()
        previous_stop, previous_class = None, None
        for start, stop, test_id in runs:
            test_class = test_id.rsplit(".", 1)[0]
            cost = (stop - start).total_seconds()
            if test_class != previous_class and previous_stop is not None:
                cost += max(0.0, (start - previous_stop).total_seconds())
            found[test_id] = round(cost, 3)
            previous_stop, previous_class = stop, test_class
    return found


def record() -> None:
    stream = subprocess.run([STESTR, "last", "--subunit"], check=True,
                            capture_output=True).stdout
    found = costs(stream)
    with open(TIMES, "w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["test", "seconds"])
        for test_id in sorted(found):
            writer.writerow([test_id, f"{found[test_id]:.3f}"])
    print(f"{len(found)} tests, {sum(found.values()):.0f} s, in {TIMES}")


def seed() -> None:
    """Load the recorded costs into the repository as a passed run."""
    with open(TIMES, encoding="utf-8") as stream:
        rows = list(csv.DictReader(stream))
    out = io.BytesIO()
    writer = subunit.StreamResultToBytes(out)
    clock = EPOCH
    for row in rows:
        writer.status(test_id=row["test"], test_status="inprogress",
                      timestamp=clock)
        clock += datetime.timedelta(seconds=float(row["seconds"]))
        writer.status(test_id=row["test"], test_status="success",
                      timestamp=clock)
    subprocess.run([STESTR, "load", "--force-init"], input=out.getvalue(),
                   check=True, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    {"record": record, "seed": seed}[sys.argv[1]]()
