"""Every use of waitress's internals, and the check that they are there.

waitress documents ``serve`` and ``create_server`` and their arguments;
its connection (``HTTPChannel``), server (``TcpWSGIServer``), request
parser, task dispatcher, I/O loop (``wasyncore``) and trigger are not
part of that.  The front end's deadlines (:mod:`.deadline`), TLS
(:mod:`.tls`), sending (:mod:`.sending`) and its run and drain
(:mod:`.fenced`) are built on them and reach them only through this
module: the classes they extend (:data:`Channel`, :data:`Parser`,
:data:`Server`, :data:`TaskDispatcher`), the methods of those classes
they override (:data:`OVERRIDDEN`) and the functions below for the
state they read or change (:mod:`.dispatch` extends
:data:`TaskDispatcher` and replaces its ``queue_cv``, over its
``lock``).

:func:`missing` names each piece the installed waitress lacks, checked
on the classes and on a channel, server and dispatcher made on
throwaway sockets; :data:`MISSING` is its answer at import.  When it is
not empty, :mod:`.server` serves with stock waitress (:mod:`.stock`)
and logs what is lost.  Tested with waitress :data:`TESTED`; setup.cfg
bounds waitress below the next minor release.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import inspect
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

try:
    from waitress import wasyncore
    from waitress.adjustments import Adjustments
    from waitress.channel import HTTPChannel
    from waitress.parser import HTTPRequestParser
    from waitress.parser import ParsingError as ParsingError
    from waitress.server import TcpWSGIServer
    from waitress.task import ThreadedTaskDispatcher
except ImportError as exc:  # a module moved: the check names it
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None
    Channel = HTTPChannel
    Parser = HTTPRequestParser
    Server = TcpWSGIServer
    TaskDispatcher = ThreadedTaskDispatcher

#: The waitress releases this module was tested with.
TESTED = ">=3.0.2,<3.1"

#: The methods and class attributes of waitress's classes that the front
#: end's subclasses override (waitress calls them).
OVERRIDDEN = {
    "channel": ("__init__", "service", "writable", "readable",
                "handle_read", "handle_write", "send", "parser_class"),
    "parser": ("received", "parse_header"),
    "server": ("channel_class", "maintenance"),
}
#: Class attributes read or called, beyond those overridden.
_CLASS = {
    "channel": ("handle_close", "received", "request", "will_close",
                "close_when_flushed", "total_outbufs_len",
                "current_outbuf_count", "last_activity"),
    "parser": ("close", "error", "content_length"),
    "server": ("accepting",),
    "dispatcher": ("set_thread_count", "shutdown"),
    "loop": ("loop", "close_all", "dispatcher"),
}
#: Parameters passed by name (or positionally, in this order).
_PARAMETERS = {
    ("channel", "__init__"): ("server", "sock", "addr", "adj", "map"),
    ("channel", "send"): ("data", "do_close"),
    ("parser", "received"): ("data",),
    ("parser", "parse_header"): ("header_plus",),
    ("server", "__init__"): ("application", "map", "_start", "_sock",
                             "dispatcher", "adj", "sockinfo",
                             "bind_socket"),
    ("server", "maintenance"): ("now",),
    ("dispatcher", "shutdown"): ("cancel_pending", "timeout"),
    ("loop", "loop"): ("timeout", "use_poll", "map", "count"),
}
#: Attributes of instances (set in ``__init__``), dotted below one; in
#: the order they are made.
_INSTANCE = {
    "adjustments": ("listen", "outbuf_high_watermark", "recv_bytes",
                    "max_request_body_size"),
    "parser": ("headers", "adj"),
    "dispatcher": ("lock", "queue_cv"),
    "server": ("trigger", "trigger._closed", "trigger.pull_trigger",
               "active_channels", "effective_port"),
    "channel": ("outbufs", "outbufs[-1].append", "outbuf_lock",
                "outbuf_lock.acquire", "requests_lock", "requests", "adj",
                "socket"),
}
_NAMES = {"channel": "waitress.channel.HTTPChannel",
          "parser": "waitress.parser.HTTPRequestParser",
          "server": "waitress.server.TcpWSGIServer",
          "dispatcher": "waitress.task.ThreadedTaskDispatcher",
          "adjustments": "waitress.adjustments.Adjustments",
          "loop": "waitress.wasyncore"}


@dataclass(frozen=True)
class Waitress:
    """The waitress objects checked (the installed ones; a test passes
    stand-ins lacking a piece)."""

    channel: Any
    parser: Any
    server: Any
    dispatcher: Any
    adjustments: Any
    loop: Any


def installed() -> Waitress | None:
    """The installed waitress's objects; None when a module is gone."""
    if _IMPORT_ERROR is not None:
        return None
    return Waitress(Channel, Parser, Server, TaskDispatcher, Adjustments,
                    wasyncore)


def missing(found: Waitress | None = None) -> list[str]:
    """Each piece that ``found`` (the installed waitress) lacks, named
    ``waitress.module.Class.attribute`` (``Class()`` for an attribute
    of an instance, ``method(parameter)`` for a parameter)."""
    if found is None:
        found = installed()
        if found is None:
            return [f"{_IMPORT_ERROR}"]
    gone = []
    for part, names in (*OVERRIDDEN.items(), *_CLASS.items()):
        owner = getattr(found, part)
        gone += [f"{_NAMES[part]}.{name}" for name in names
                 if not hasattr(owner, name)]
    for (part, method), params in _PARAMETERS.items():
        gone += _lacking_parameters(found, part, method, params)
    made: dict[str, Any] = {}
    try:
        for part in ("adjustments", "parser", "dispatcher", "server",
                     "channel"):
            try:
                made[part] = _make(found, part, made)
            except Exception as exc:  # a constructor changed
                return [*gone, f"{_NAMES[part]}(): {exc!r}"]
            lacking = [f"{_NAMES[part]}().{name}" for name in _INSTANCE[part]
                       if not _has(made[part], name)]
            if lacking:  # what is made next would fail for it
                return gone + lacking
    finally:
        _close(made)
    return gone


def _lacking_parameters(found: Waitress, part: str, method: str,
                        params: tuple[str, ...]) -> list[str]:
    function = getattr(getattr(found, part), method, None)
    if function is None:
        return []  # named as missing already
    try:
        have = set(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        have = set()
    return [f"{_NAMES[part]}.{method}({name})" for name in params
            if name not in have]


def _has(obj: Any, dotted: str) -> bool:
    for name in dotted.split("."):
        if name.endswith("[-1]"):
            obj = getattr(obj, name[:-4], None)
            if not obj:
                return False
            obj = obj[-1]
        elif not hasattr(obj, name):
            return False
        else:
            obj = getattr(obj, name)
    return True


def _make(found: Waitress, part: str, made: dict[str, Any]) -> Any:
    """An instance of ``part``, on throwaway sockets (no thread started,
    nothing listening), given those made before it."""
    if part == "adjustments":
        return found.adjustments(host="127.0.0.1", port=0)
    if part == "parser":
        return found.parser(made["adjustments"])
    if part == "dispatcher":
        return found.dispatcher()
    if part == "server":
        return found.server(
            lambda environ, start_response: [], map={}, _start=False,
            dispatcher=made["dispatcher"], adj=made["adjustments"],
            bind_socket=False,
            sockinfo=(socket.AF_INET, socket.SOCK_STREAM,
                      socket.IPPROTO_TCP, ("127.0.0.1", 0)))
    made["sockets"] = socket.socketpair()
    return found.channel(made["server"], made["sockets"][0],
                         ("127.0.0.1", 1), made["adjustments"], map={})


def _close(made: dict[str, Any]) -> None:
    for part in ("channel", "server"):
        if part in made:
            with contextlib.suppress(Exception):
                made[part].close()
    for sock in made.get("sockets", ()):
        sock.close()


MISSING: tuple[str, ...] = tuple(missing())


def version() -> str:
    """The installed waitress's version."""
    try:
        return importlib.metadata.version("waitress")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


# What the front end reads or changes of a connection (a Channel).

def requests_lock(channel: Any) -> threading.Lock:
    """The lock under which waitress changes the requests received and
    the one being received."""
    lock: threading.Lock = channel.requests_lock
    return lock


def request_running(channel: Any) -> bool:
    """Whether a received request waits for, or is in, a request thread."""
    return bool(channel.requests)


def request_began(channel: Any) -> float | None:
    """``began`` of the parser of the request being received (set by
    the front end's parser), None when none is being received."""
    return getattr(channel.request, "began", None)


def discard_request(channel: Any) -> None:
    """Forget the request being received (its body's temporary file
    closed); I/O thread."""
    if channel.request is not None:
        channel.request.close()
    channel.request = None


def refused_requests(channel: Any) -> bool:
    """Whether a request received was refused by the parser (malformed,
    or over a size limit); waitress answers it with its error and
    closes.  Under :func:`requests_lock`."""
    return any(request.error is not None for request in channel.requests)


def output_pending(channel: Any) -> int:
    """Bytes queued for the client and not sent yet."""
    pending: int = channel.total_outbufs_len
    return pending


def output_over_watermark(channel: Any) -> bool:
    """Whether a request thread writing more would wait for the I/O
    loop to send (waitress's ``outbuf_high_watermark``)."""
    return bool(channel.total_outbufs_len > channel.adj.outbuf_high_watermark)


def output_lock(channel: Any) -> Any:
    """The lock a request thread holds while it appends and sends output
    (a ``threading.Condition``; reentrant)."""
    return channel.outbuf_lock


def queue_output(channel: Any, data: bytes) -> None:
    """``data`` queued after what is queued, for the I/O loop to send."""
    with channel.outbuf_lock:
        channel.outbufs[-1].append(data)
        channel.total_outbufs_len += len(data)
        channel.current_outbuf_count += len(data)


def stock_writable(channel: Any) -> bool:
    """waitress's own ``writable``: output queued, or a close asked for."""
    return bool(Channel.writable(channel))


def last_sent(channel: Any) -> float:
    """``time.time()`` of the last byte sent or received (none is read
    while output is queued), or of the connection's opening."""
    when: float = channel.last_activity
    return when


def closing(channel: Any) -> bool:
    """Whether the connection was told to close (now, or once sent)."""
    return bool(channel.will_close or channel.close_when_flushed)


def close_when_sent(channel: Any) -> None:
    """Close once the output queued is sent."""
    channel.close_when_flushed = True


def close_soon(channel: Any) -> None:
    """Close at the I/O loop's next round, whatever is queued."""
    channel.will_close = True


def close_now(channel: Any) -> None:
    """Close now (I/O thread, or any thread not holding the output lock)."""
    channel.handle_close()


def socket_of(channel: Any) -> Any:
    """The connection's socket; None once closed."""
    return channel.socket


def receive_size(channel: Any) -> int:
    """Bytes asked of the socket per read (waitress's ``recv_bytes``)."""
    size: int = channel.adj.recv_bytes
    return size


def deliver(channel: Any, data: bytes) -> None:
    """``data`` read from the client, handed to the request parser."""
    channel.last_activity = time.time()
    channel.received(data)


# What the front end's parser (a Parser) reads or changes.

def header(parser: Any, name: str) -> str:
    """A header of the request being parsed, by its WSGI name
    (``CONTENT_LENGTH``); empty when absent."""
    value: str = parser.headers.get(name, "")
    return value


def over_the_body_limit(parser: Any) -> None:
    """Have the parser answer the request 413, as for a body over the
    limit (a ``Content-Length`` it could not read as a number)."""
    parser.content_length = parser.adj.max_request_body_size


# The server, the loop and the dispatcher.

def adjustments(**arguments: Any) -> Any:
    """waitress's settings from its documented arguments."""
    return Adjustments(**arguments)


def listen_addresses(adj: Any) -> list[Any]:
    """The socket addresses ``adj``'s host and port resolve to."""
    return list(adj.listen)


def new_server(server_class: Any, app: Any, map: dict[int, Any],
               dispatcher: Any, adj: Any, address: Any) -> Any:
    """A server of ``server_class`` (a :data:`Server`) bound and
    listening on ``address``, its connections in ``map``."""
    return server_class(app, map, dispatcher=dispatcher, adj=adj,
                        sockinfo=address)


def channels(server: Any) -> list[Any]:
    """The server's open connections."""
    return list(server.active_channels.values())


def bound_port(server: Any) -> int:
    """The port the server listens on."""
    return int(server.effective_port)


def wake(server: Any) -> None:
    """Have the I/O loop go round now, unless its trigger is closed
    (waitress closes it with a listening socket; its descriptor number
    may be another file's by then, which must not be written)."""
    trigger = server.trigger
    if not trigger._closed:
        with contextlib.suppress(OSError):  # closed meanwhile
            trigger.pull_trigger()


def stop_accepting(server: Any) -> None:
    """Close the listening socket; the trigger stays."""
    server.accepting = False
    wasyncore.dispatcher.close(server)


def run_once(map: dict[int, Any], timeout: float) -> None:
    """One round of the I/O loop over ``map`` (``poll()``, at most
    ``timeout`` seconds)."""
    wasyncore.loop(timeout=timeout, map=map, use_poll=True, count=1)


def close_all(map: dict[int, Any]) -> None:
    """Close every socket of ``map``."""
    wasyncore.close_all(map)
