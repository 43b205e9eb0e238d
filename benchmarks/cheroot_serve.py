"""``baremetal-alloc-server`` with its former HTTP front end, cheroot.

For :mod:`benchmarks.frontend` only: the same command line, application,
workers and database code, served by cheroot's thread-per-connection
``wsgi.Server`` as before issue 20 instead of
:class:`baremetal_allocclient.server.frontend.server.FrontEnd` (TLS is not
wired; the benchmark speaks plain HTTP).  Needs ``cheroot``
(benchmarks/requirements.txt).
"""

from __future__ import annotations

import sys
from typing import Any

from cheroot import wsgi

from baremetal_allocclient.server import cmd
from baremetal_allocclient.server.frontend import server as frontend


class CherootFrontEnd:
    """The ``FrontEnd`` interface over cheroot, configured as it was."""

    def __init__(self, app: Any, host: str, port: int, options: Any, *,
                 backlog: int, max_header: int, max_body: int,
                 tls_context: Any = None) -> None:
        del max_body, tls_context  # the application limits bodies
        self.server = wsgi.Server(
            (host, port), app, numthreads=options.threads,
            server_name="baremetal-alloc-server",
            request_queue_size=backlog)
        self.server.max_request_header_size = max_header

    def prepare(self) -> None:
        self.server.prepare()

    def serve(self) -> None:
        self.server.serve()

    def stop(self) -> None:
        self.server.stop()


if __name__ == "__main__":
    frontend.FrontEnd = CherootFrontEnd  # type: ignore[misc,assignment]
    sys.exit(cmd.main())
