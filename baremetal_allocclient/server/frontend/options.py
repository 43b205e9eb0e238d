"""What the HTTP front end is given (its options are declared with the
others in :mod:`baremetal_allocclient.server.options`)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass


@dataclass(frozen=True)
class FrontEndOptions:
    """How many threads and connections, and how long to wait for whom."""

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
