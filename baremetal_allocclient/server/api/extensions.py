"""How a request opts into this server's extensions of the Ironic API.

Plain Ironic clients never see an extension: a request names the ones
it wants in the ``X-Baremetal-Alloc-Extensions`` header, and without it
the server answers as Ironic does.  What each extension changes, and
what ``GET /v1`` advertises of them, is the allocation wing's
(``allocation/handlers/extensions.py``); both wings ask here whether a
request opted in.  Wire format: doc/source/howto/choosing-nodes.rst.
"""

from __future__ import annotations

import functools

from baremetal_allocclient import constraints
from baremetal_allocclient.server.api.context import Context

#: The queue extension: its name (in the header and in ``GET /v1``).
QUEUE = "queue"


@functools.lru_cache(maxsize=16)
def requested(header: str | None) -> frozenset[str]:
    """Extension names in an ``X-Baremetal-Alloc-Extensions`` value
    (parsed once per value: a request asks several times, and clients
    send the same few values)."""
    return frozenset(part.strip().lower() for part in (header or "").split(",")
                     if part.strip())


def constraints_requested(ctx: Context) -> bool:
    """Whether the request opted into the constraints extension."""
    header = ctx.request.headers.get(constraints.EXTENSION_HEADER)
    return constraints.EXTENSION in requested(header)


def queue_requested(ctx: Context) -> bool:
    """Whether the request opted into the queue extension."""
    header = ctx.request.headers.get(constraints.EXTENSION_HEADER)
    return QUEUE in requested(header)
