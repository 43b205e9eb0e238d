"""Where a benchmark's raw output goes: ``benchmarks/results/``, ignored.

The convention every module of ``benchmarks/`` follows (a new one too):

* a run writes its raw output (the JSON with every round's figures, and
  anything else it makes: charts, profiles) under :data:`DIRECTORY`,
  ``benchmarks/results/`` of the checkout, which ``.gitignore`` excludes.
  Raw runs are never committed;
* the module takes ``--output FILE`` (:func:`add_option`); its default,
  :func:`default_path`, is ``benchmarks/results/<name>-<UTC time>.json``,
  a new file for every run, so that a run never overwrites the one
  before (a before/after pair keeps both sides);
* it writes with :func:`write_json`, which creates the directory (a fresh
  clone has none), replaces the file whole and prints its path on
  standard error;
* what is kept is the summary: the figures a run gave, with its date and
  time, commit, command and load average, quoted on the benchmark's
  section of ``doc/source/internals/benchmarks.rst`` (the latest run of
  each benchmark, and the ones a decision rests on).  The page names no
  raw file: it exists only on the machine that ran the benchmark.

``baremetal_allocclient/tests/functional/bench/test_rawruns.py`` checks
that the default of each module's ``--output`` is a file git ignores;
a new module that writes results is added to its list.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from typing import Any

DIRECTORY = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         "results")


def default_path(name: str,
                 now: datetime.datetime | None = None) -> str:
    """``DIRECTORY/<name>-<UTC time to the second>.json``."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return os.path.join(DIRECTORY, f"{name}-{now:%Y-%m-%dT%H%M%SZ}.json")


def add_option(parser: argparse.ArgumentParser, name: str,
               *aliases: str, dest: str = "output") -> None:
    """Add ``--output`` (and ``aliases``), a new file in
    :data:`DIRECTORY` named after ``name`` by default."""
    parser.add_argument(
        "--output", *aliases, dest=dest, default=default_path(name),
        help="where the run's JSON goes (default: %(default)s; "
        "benchmarks/results/ is not committed)")


def write_json(path: str, data: Any) -> str:
    """Write ``data`` as JSON to ``path``, creating its directory; the file
    is replaced whole (written beside it, then renamed).  Returns
    ``path``, also printed on standard error; an empty ``path``
    (``--output ''``) writes nothing."""
    if not path:
        return path
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    partial = f"{path}.{os.getpid()}.tmp"
    with open(partial, "w", encoding="utf-8") as stream:
        json.dump(data, stream, indent=2)
        stream.write("\n")
    os.replace(partial, path)
    print(f"results in {path}", file=sys.stderr, flush=True)
    return path
