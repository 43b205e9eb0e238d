"""``baremetal-alloc-server`` answering a fixed body of a given size.

For :mod:`benchmarks.floor` only: the HTTP floor.  The same command line
and so the same front end (waitress, with every setting ``serve`` gives it:
threads, limits, ``send_bytes``, the request deadline), but the WSGI
application it is given is replaced by a hello world that reads the
request body and answers a body of the size the real answer had:
``POST`` the create size (201), ``GET`` with a query string the list size,
any other ``GET`` the size of one allocation.  The sizes come from the
environment variable ``BENCH_HELLO_SIZES`` (``create=N,get=N,list=N``).

With ``BENCH_HELLO_SQL`` set to a database URL, it is the **served
floor**: before answering, each request does its SQL floor's work
(:mod:`benchmarks.floor_sql`, on that database, nodes of the resource
class ``BENCH_HELLO_RC``) in the request thread, as the server does its
own: a ``POST`` creates an allocation and gives it a node, a ``GET``
with a query string lists ``limit`` allocations, any other ``GET`` reads
one of the allocations it created, in turn.  One driver connection
serves every request, one at a time.

The rest of ``serve`` (database, workers, heartbeat) still starts, so its
idle background threads are counted in this floor as in the server's
figure.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import urllib.parse
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from baremetal_allocclient.server import cmd
from baremetal_allocclient.server.frontend import server as frontend

SIZES_ENV = "BENCH_HELLO_SIZES"
SQL_ENV = "BENCH_HELLO_SQL"
RC_ENV = "BENCH_HELLO_RC"


def request_kind(environ: dict[str, Any]) -> str:
    """``create`` (a ``POST``), ``list`` (a ``GET`` with a query string)
    or ``get``."""
    if environ["REQUEST_METHOD"] == "POST":
        return "create"
    return "list" if environ.get("QUERY_STRING") else "get"


def hello_world(sizes: dict[str, int]) -> Callable[..., Iterable[bytes]]:
    """A WSGI application answering bodies of the given sizes."""
    bodies = {kind: b"x" * size for kind, size in sizes.items()}

    def application(environ: dict[str, Any],
                    start_response: Callable[..., Any]) -> Iterable[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        if length:
            environ["wsgi.input"].read(length)
        kind = request_kind(environ)
        status = "201 Created" if kind == "create" else "200 OK"
        body = bodies.get(kind, b"hello")
        start_response(status, [("Content-Type", "application/json"),
                                ("Content-Length", str(len(body)))])
        return [body]

    return application


class FloorWork:
    """The SQL floor's work of each kind of request, on one connection."""

    def __init__(self, url: str, resource_class: str) -> None:
        # Imported here: the plain hello world needs no database driver.
        from benchmarks import floor_sql

        self.floor = floor_sql.Floor(url, resource_class)
        self.lock = threading.Lock()
        self.made: list[str] = []
        self.turn = itertools.count()

    def __call__(self, kind: str, query_string: str) -> None:
        with self.lock:
            if kind == "create":
                made = str(uuid.uuid4())
                self.floor.create_one(made)
                self.made.append(made)
            elif kind == "list":
                query = urllib.parse.parse_qs(query_string)
                self.floor.list(int(query.get("limit", ["1000"])[0]))
            elif self.made:  # (none for the start-up's readiness check)
                self.floor.get(self.made[next(self.turn) % len(self.made)])


def served_floor(sizes: dict[str, int], work: FloorWork
                 ) -> Callable[..., Iterable[bytes]]:
    """The hello world of ``sizes`` doing each request's SQL floor work
    before it answers."""
    hello = hello_world(sizes)

    def application(environ: dict[str, Any],
                    start_response: Callable[..., Any]) -> Iterable[bytes]:
        work(request_kind(environ), environ.get("QUERY_STRING", ""))
        return hello(environ, start_response)

    return application


def parse_sizes(text: str) -> dict[str, int]:
    """``create=N,get=N,list=N`` as a dict."""
    pairs = (item.split("=", 1) for item in text.split(",") if item)
    return {kind: int(size) for kind, size in pairs}


class HelloFrontEnd(frontend.FrontEnd):
    """The server's front end, given the hello world instead of the API."""

    def __init__(self, app: Any, *args: Any, **kwargs: Any) -> None:
        del app
        sizes = parse_sizes(os.environ.get(SIZES_ENV, ""))
        sql = os.environ.get(SQL_ENV)
        hello = hello_world(sizes) if not sql else served_floor(
            sizes, FloorWork(sql, os.environ[RC_ENV]))
        super().__init__(hello, *args, **kwargs)


if __name__ == "__main__":
    # Run as a script: the served floor imports benchmarks.floor_sql.
    sys.path.insert(1, os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    frontend.FrontEnd = HelloFrontEnd  # type: ignore[misc]
    sys.exit(cmd.main())
