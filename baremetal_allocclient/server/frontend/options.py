"""What the HTTP front end is given (its options are declared with the
others in :mod:`baremetal_allocclient.server.options`)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

CHECK_INTERVAL = 1.0  # seconds between two deadline checks
SHUTDOWN_GRACE = 30.0  # longest wait for running requests on stop
#: Bytes of a request being received, or of an answer the client has not
#: taken yet, kept in memory per connection; the rest goes to a temporary
#: file (waitress keeps 512 KiB and 1 MiB: 300 stalled half-sent bodies
#: held 155 MB, 400 answers of 0.4 MB nobody read 126 MB; with 64 KiB,
#: see doc/source/internals/benchmarks.rst).
IN_MEMORY = 64 * 1024
IDENT = "baremetal-alloc-server"


@dataclass(frozen=True)
class FrontEndOptions:
    """How many threads and connections, and how long to wait for whom
    (``connection_limit`` as asked; :mod:`.server` lowers it to what the
    open-file limit allows)."""

    threads: int
    request_timeout: float
    idle_timeout: float
    connection_limit: int


def from_args(args: argparse.Namespace) -> FrontEndOptions:
    """The options ``serve`` was given."""
    return FrontEndOptions(
        threads=args.threads, request_timeout=args.request_timeout,
        idle_timeout=args.idle_timeout,
        connection_limit=args.connection_limit,
    )
