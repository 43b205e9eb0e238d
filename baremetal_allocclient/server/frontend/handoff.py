"""A request's connection handed over by the front end (for a stream
served by another thread, the watch hub).

waitress gives the application no socket; its environment's
``waitress.client_disconnected`` is a method of the connection (the
channel).  :func:`take_socket` duplicates the channel's socket and
closes the channel, so waitress forgets the connection (it sends
nothing more on it: its own answer to the request finds it closed) and
the caller owns the duplicate.  Plain TCP only: a TLS connection's
state is waitress's (:func:`can_take` says no, and the stream is not
offered on it).
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Any

from baremetal_allocclient.server.frontend import waitress_internals as w

_CHANNEL_KEY = "waitress.client_disconnected"


def _channel(environ: Mapping[str, Any]) -> Any:
    return getattr(environ.get(_CHANNEL_KEY), "__self__", None)


def can_take(environ: Mapping[str, Any]) -> bool:
    """Whether the request's connection can be handed over."""
    return (environ.get("wsgi.url_scheme") == "http"
            and _channel(environ) is not None)


def take_socket(environ: Mapping[str, Any]) -> socket.socket | None:
    """The request's connection, now the caller's (None: it is gone)."""
    channel = _channel(environ)
    if channel is None:
        return None
    sock = w.socket_of(channel)
    if sock is None:
        return None
    taken: socket.socket = sock.dup()
    w.close_now(channel)
    return taken
