"""``baremetal-alloc-server`` answering a fixed body of a given size.

For :mod:`benchmarks.floor` only: the HTTP floor.  The same command line
and so the same front end (waitress, with every setting ``serve`` gives it:
threads, limits, ``send_bytes``, the request deadline), but the WSGI
application it is given is replaced by a hello world that reads the
request body and answers a body of the size the real answer had:
``POST`` the create size (201), ``GET`` with a query string the list size,
any other ``GET`` the size of one allocation.  The sizes come from the
environment variable ``BENCH_HELLO_SIZES`` (``create=N,get=N,list=N``).

The rest of ``serve`` (database, workers, heartbeat) still starts, so its
idle background threads are counted in this floor as in the server's
figure.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

from baremetal_allocclient.server import cmd
from baremetal_allocclient.server.frontend import server as frontend

SIZES_ENV = "BENCH_HELLO_SIZES"


def hello_world(sizes: dict[str, int]) -> Callable[..., Iterable[bytes]]:
    """A WSGI application answering bodies of the given sizes."""
    bodies = {kind: b"x" * size for kind, size in sizes.items()}

    def application(environ: dict[str, Any],
                    start_response: Callable[..., Any]) -> Iterable[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        if length:
            environ["wsgi.input"].read(length)
        if environ["REQUEST_METHOD"] == "POST":
            kind, status = "create", "201 Created"
        else:
            kind = "list" if environ.get("QUERY_STRING") else "get"
            status = "200 OK"
        body = bodies.get(kind, b"hello")
        start_response(status, [("Content-Type", "application/json"),
                                ("Content-Length", str(len(body)))])
        return [body]

    return application


def parse_sizes(text: str) -> dict[str, int]:
    """``create=N,get=N,list=N`` as a dict."""
    pairs = (item.split("=", 1) for item in text.split(",") if item)
    return {kind: int(size) for kind, size in pairs}


class HelloFrontEnd(frontend.FrontEnd):
    """The server's front end, given the hello world instead of the API."""

    def __init__(self, app: Any, *args: Any, **kwargs: Any) -> None:
        del app
        hello = hello_world(parse_sizes(os.environ.get(SIZES_ENV, "")))
        super().__init__(hello, *args, **kwargs)


if __name__ == "__main__":
    frontend.FrontEnd = HelloFrontEnd  # type: ignore[misc]
    sys.exit(cmd.main())
