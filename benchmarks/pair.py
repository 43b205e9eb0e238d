"""Server CPU per request of two code trees, measured side by side.

``python -m benchmarks.pair --before DIR``: two ``serve`` processes, one
running the code of the tree ``DIR`` (a ``git worktree`` of the commit
before a change, put first on ``PYTHONPATH``), one this tree's, each on
its own fresh fleet; then ``--rounds`` alternating rounds of
``--creates`` creates with ``Prefer: wait`` sent to each in turn, and
the same for ``--gets`` polls and ``--lists`` lists of every
allocation made (at most 1,000, the server's largest page).  The
figure is the server process's CPU per request (as
:mod:`benchmarks.floor` measures it); the table gives
each side's median over the rounds and the median of the rounds'
after/before ratios, which a change of the machine's load during the
run moves little, since both sides of a ratio were measured a moment
apart.  With ``--kept N`` each fleet starts in use: N more nodes,
deployed, each with an ``active`` allocation
(:func:`benchmarks.reference.keep_allocations`), which a request should
not have to read.  A comparison with a floor is
:mod:`benchmarks.floor`'s.

Usage (from the repository root)::

    git worktree add --detach /tmp/before HEAD~1
    .venv/bin/python -m benchmarks.pair --before /tmp/before --db sqlite

PostgreSQL comes from ``BAREMETAL_ALLOC_TEST_POSTGRESQL_URL`` (see
:mod:`benchmarks.reference`).  The run's JSON goes to a new file in
``benchmarks/results/`` (not committed; ``--output``, see
:mod:`benchmarks.rawruns`).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks import floor, rawruns, reference

LIST_LIMIT = 1000  # the server's largest page
KINDS = ("create", "get", "list")


@contextlib.contextmanager
def database(kind: str) -> Iterator[str]:
    """A fresh database of ``kind`` (``sqlite`` or ``postgresql``)."""
    if kind == "sqlite":
        yield f"sqlite:///{tempfile.mkdtemp(prefix='bench-pair-')}/a.db"
    else:
        with reference.postgresql_database() as url:
            yield url


@contextlib.contextmanager
def code_of(tree: str | None) -> Iterator[None]:
    """The environment of a server running the code of ``tree`` (None:
    this tree's, as installed)."""
    saved = os.environ.get("PYTHONPATH")
    if tree is not None:
        os.environ["PYTHONPATH"] = os.path.abspath(tree)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def sender(kind: str, client: floor.Client, uuids: list[str]
           ) -> Callable[[int], None]:
    """What sends request ``i`` of ``kind``: a create (its allocation
    joins ``uuids``), a poll of one of ``uuids``, or a list of them."""
    def create(_index: int) -> None:
        uuids.append(client.create())

    def poll(index: int) -> None:
        client.get(uuids[index % len(uuids)])

    def listing(_index: int) -> None:
        client.list(min(len(uuids), LIST_LIMIT))

    return {"create": create, "get": poll, "list": listing}[kind]


def measure(args: argparse.Namespace, urls: tuple[str, str]
            ) -> dict[str, dict[str, list[float]]]:
    """CPU ms per request of each side, per kind, per round."""
    nodes = args.rounds * args.creates + floor.WARMUP + 10
    servers = []
    try:
        for url, tree in zip(urls, (args.before, None), strict=True):
            # Each side's own migrations and enrollment: the schemas of
            # the two trees may differ.
            with code_of(tree):
                reference.server("db", "upgrade", "--db", url)
                workdir = tempfile.mkdtemp(prefix="bench-pair-")
                if args.kept:
                    reference.keep_allocations(url, args.kept, floor.RC,
                                               workdir)
                reference.enroll(url, nodes, floor.RC, workdir)
                if args.kept:
                    reference.analyze(url)
                servers.append(reference.start(url))
        clients = [floor.Client(s.endpoint, expect_active=True)
                   for s in servers]
        made = [[c.create() for _ in range(floor.WARMUP)] for c in clients]
        samples: dict[str, dict[str, list[float]]] = {
            kind: {"before": [], "after": []} for kind in KINDS}
        for kind, count in zip(KINDS, (args.creates, args.gets, args.lists),
                               strict=True):
            for _round in range(args.rounds):
                for side, server, client, uuids in zip(
                        ("before", "after"), servers, clients, made,
                        strict=True):
                    samples[kind][side].append(floor.per_request_ms(
                        server.pid, count, sender(kind, client, uuids)))
        return samples
    finally:
        for server in servers:
            server.stop()


def summary(samples: dict[str, dict[str, list[float]]]
            ) -> dict[str, dict[str, Any]]:
    return {kind: {
        "before_ms": statistics.median(sides["before"]),
        "after_ms": statistics.median(sides["after"]),
        "ratio": statistics.median(
            after / before for before, after in zip(
                sides["before"], sides["after"], strict=True)),
        "rounds": sides,
    } for kind, sides in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True,
                        help="the tree whose code is the 'before' side")
    floor.add_database_option(parser)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--creates", type=int, default=100,
                        help="creates per round and side")
    parser.add_argument("--gets", type=int, default=300,
                        help="polls per round and side")
    parser.add_argument("--lists", type=int, default=10,
                        help="lists per round and side")
    parser.add_argument("--kept", type=int, default=0,
                        help="active allocations of deployed nodes in each "
                             "fleet before measuring (a fleet in use)")
    rawruns.add_option(parser, "pair")
    args = parser.parse_args()
    results = {}
    for kind in args.db:
        with database(kind) as before_url, database(kind) as after_url:
            results[kind] = summary(measure(args, (before_url, after_url)))
        for request, figures in results[kind].items():
            print(f"{kind:<11} {request:<7} before {figures['before_ms']:.3f}"
                  f" ms  after {figures['after_ms']:.3f} ms  after/before "
                  f"{figures['ratio']:.2f}")
    rawruns.write_json(args.output, {
        "started": datetime.datetime.now(
            datetime.timezone.utc).isoformat(timespec="seconds"),
        "arguments": {k: v for k, v in vars(args).items()
                      if k not in ("output", "before")},
        "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
