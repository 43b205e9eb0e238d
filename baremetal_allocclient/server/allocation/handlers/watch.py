"""``GET /v1/allocation_changes``: the watch extension (Ironic has no
such path).

A request that names the extension in ``X-Baremetal-Alloc-Extensions``
gets a stream of JSON lines (``allocation/watch/events.py``), held by
the process's one watch hub; without the header the path answers 404,
as it would on Ironic.  The request is checked here (cursor, filters,
scope, the watcher limit) and answered with an error as any other;
once accepted, its connection is handed to the hub.  Wire format:
doc/source/reference/watch.rst.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from baremetal_allocclient import extension_names
from baremetal_allocclient.server.allocation.handlers.services import (
    allocation_services,
)
from baremetal_allocclient.server.allocation.service import watching
from baremetal_allocclient.server.allocation.watch import events
from baremetal_allocclient.server.allocation.watch.feed import Feed
from baremetal_allocclient.server.allocation.watch.hub import (
    Full,
    Watcher,
    chunk,
)
from baremetal_allocclient.server.api import versions
from baremetal_allocclient.server.api.context import Context, principal
from baremetal_allocclient.server.api.errors import ApiError, bad_request
from baremetal_allocclient.server.api.extensions import requested
from baremetal_allocclient.server.api.http import Response
from baremetal_allocclient.server.frontend import handoff

NOT_FOUND = "The resource could not be found."
#: The filters, as the query names them.
_FILTERS = ("resource_class", "state", "owner", "node", "name", "group",
            "uuid")
_HEAD = ("HTTP/1.1 200 OK\r\n"
         "Content-Type: " + events.MEDIA_TYPE + "\r\n"
         "Transfer-Encoding: chunked\r\n"
         "Cache-Control: no-store\r\n"
         "Connection: close\r\n")


def opted_in(ctx: Context) -> bool:
    """Whether the request names the watch extension."""
    header = ctx.request.headers.get(extension_names.EXTENSION_HEADER)
    return extension_names.WATCH in requested(header)


def _since(text: str | None) -> int | None:
    if text is None:
        return None
    if not (text.isascii() and text.isdigit()) or len(text) > 18:
        raise bad_request(f"Invalid cursor '{text}': a whole number of "
                          f"at most 18 digits is expected.")
    return int(text)


def _asked(ctx: Context) -> watching.Asked:
    values = {name: ctx.query(name) for name in _FILTERS}
    if values["owner"] is not None and \
            ctx.minor < versions.ALLOCATION_OWNER:
        raise ApiError(406, "Request not acceptable.")
    state = values["state"]
    if state is not None and state not in events.STATES:
        raise bad_request(f"Invalid state '{state}': one of "
                          f"{', '.join(events.STATES)} is expected.")
    return watching.Asked(since=_since(ctx.query("since")), **values)


def watch_allocations(ctx: Context) -> Response:
    """GET /v1/allocation_changes: check, then hand the connection to
    the hub."""
    feed = allocation_services(ctx).watch
    if ctx.minor < versions.ALLOCATIONS or not opted_in(ctx) or \
            feed is None:
        raise ApiError(404, NOT_FOUND)
    if not handoff.can_take(ctx.request.environ):
        raise ApiError(501, "This server streams changes over plain HTTP "
                            "only; poll the allocations instead.")
    watch_filter, since = watching.start(ctx.services.db, principal(ctx),
                                         _asked(ctx))
    try:
        feed.hub.reserve()
    except Full:
        raise ApiError(503, "This server holds as many watchers as it may "
                            "(watch_max_watchers); poll the allocations "
                            "instead, or retry later.") from None
    return Stream(feed, watch_filter, since)


class Stream(Response):
    """The answer of an accepted watch: its head and the events are sent
    by the hub, on the connection taken from the front end."""

    __slots__ = ("cursor", "feed", "filter")

    def __init__(self, feed: Feed, watch_filter: events.Filter,
                 cursor: int) -> None:
        super().__init__(b"", 200, events.MEDIA_TYPE)
        self.feed = feed
        self.filter = watch_filter
        self.cursor = cursor

    def __call__(self, environ: dict[str, Any],
                 start_response: Callable[..., Any]) -> Iterable[bytes]:
        sock = handoff.take_socket(environ)
        if sock is None:
            self.feed.hub.release()
            return []
        extra = "".join(f"{name}: {value}\r\n"
                        for name, value in self.headers.items()
                        if name.lower() not in ("content-type",
                                                "content-length"))
        head = (_HEAD + extra + "\r\n").encode("latin-1")
        self.feed.join(Watcher(sock, self.filter, self.cursor),
                       head + chunk(events.hello(self.cursor)))
        # waitress finds the connection closed and sends nothing.
        start_response("200 OK", [])
        return []
