"""The ``serve`` options of the HTTP front end."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_REQUEST_TIMEOUT = 30.0
DEFAULT_IDLE_TIMEOUT = 60.0
DEFAULT_CONNECTION_LIMIT = 4096


@dataclass(frozen=True)
class FrontEndOptions:
    """How many threads and connections, and how long to wait for whom."""

    threads: int
    request_timeout: float
    idle_timeout: float
    connection_limit: int


def add_options(parser: argparse.ArgumentParser,
                seconds: Callable[[str], float],
                positive: Callable[[str], int]) -> None:
    """``--request-timeout``, ``--idle-timeout``, ``--connection-limit``;
    ``seconds`` and ``positive`` are the parser's argument types."""
    parser.add_argument(
        "--request-timeout", type=seconds, metavar="SECONDS",
        default=DEFAULT_REQUEST_TIMEOUT,
        help="a request's line, headers and body must have arrived within "
             "this many seconds of the connection's opening (of its first "
             "byte on a kept-alive connection), or the server answers 408 "
             "and closes it; slow clients hold no request thread meanwhile "
             f"(default {DEFAULT_REQUEST_TIMEOUT:g})",
    )
    parser.add_argument(
        "--idle-timeout", type=seconds, metavar="SECONDS",
        default=DEFAULT_IDLE_TIMEOUT,
        help="close a kept-alive connection that sent nothing for this "
             f"long (default {DEFAULT_IDLE_TIMEOUT:g})",
    )
    parser.add_argument(
        "--connection-limit", type=positive, metavar="N",
        default=DEFAULT_CONNECTION_LIMIT,
        help="open connections at most; beyond that new ones wait in the "
             "listen backlog; lowered to what the open-file limit allows "
             f"(default {DEFAULT_CONNECTION_LIMIT})",
    )


def from_args(args: argparse.Namespace) -> FrontEndOptions:
    """The options ``serve`` was given."""
    return FrontEndOptions(
        threads=args.threads, request_timeout=args.request_timeout,
        idle_timeout=args.idle_timeout,
        connection_limit=args.connection_limit,
    )
