"""The change stream of the reference server (the watch extension):
:func:`watch_allocations` and the waits made on it.

The stream is ``GET /v1/allocation_changes`` answered with JSON lines
(doc/source/reference/watch.rst); a dropped connection is opened again
from the last cursor read (a heartbeat's included), so nothing is
missed or repeated, until the caller's deadline.  A server that does not
advertise the extension (real Ironic) is polled instead by the waits.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import requests

from baremetal_allocclient import exceptions, extension_names
from baremetal_allocclient.v1 import budget, versions
from baremetal_allocclient.v1.resources import Allocation

if TYPE_CHECKING:
    from baremetal_allocclient.v1.protocol import Session

#: The version of the wire format this SDK reads.
VERSION = 1
MEDIA_TYPE = "application/x-ndjson"
#: Seconds between attempts to reopen a dropped stream.
REOPEN_DELAY = 0.2
#: The server's heartbeat when it does not say (seconds).
DEFAULT_HEARTBEAT = 15.0
#: Filters the server accepts.
FILTERS = ("resource_class", "state", "owner", "node", "name", "group",
           "uuid")


@dataclasses.dataclass(frozen=True)
class AllocationChange:
    """One committed change: ``op`` is ``created``, ``updated`` or
    ``deleted``; ``allocation`` as the change left it (as it was, for
    ``deleted``); ``cursor`` to resume after it."""

    cursor: int
    op: str
    allocation: Allocation


def advertised(doc: Any) -> Mapping[str, Any] | None:
    """The ``watch`` entry of a ``GET /v1`` document in a version this SDK
    reads, or None (pure)."""
    if not isinstance(doc, Mapping):
        return None
    found = doc.get("extensions")
    entry = found.get(extension_names.WATCH) if isinstance(found, Mapping) \
        else None
    if isinstance(entry, Mapping) and entry.get("version") == VERSION:
        return entry
    return None


def supported(session: Session) -> bool:
    """Whether the server offers the stream (reads ``GET /v1`` once)."""
    return advertised(session._v1_document()) is not None


def known_supported(session: Session) -> bool:
    """Whether ``GET /v1``, if this client read it already, offers the
    stream (no request)."""
    doc = getattr(session, "_v1_doc", None)
    return doc is not None and advertised(doc) is not None


#: The header of an allocation list giving the cursor to watch from.
CURSOR_HEADER = "X-Baremetal-Alloc-Watch-Cursor"


def cursor(session: Session) -> int:
    """The cursor to watch from after a list made next (read before the
    list: every change the list misses comes after it)."""
    transport = session._transport
    response = transport.request(
        "GET", "/v1/allocations", feature=versions.ALLOCATIONS,
        params={"limit": 1, "fields": "uuid"},
        headers={extension_names.EXTENSION_HEADER: extension_names.WATCH},
        idempotent=True)
    value = response.headers.get(CURSOR_HEADER)
    if value is None or not value.isdigit():
        raise exceptions.ExtensionNotSupported(
            "The server does not offer the change stream (watch "
            "extension); poll the allocations instead.")
    return int(value)


def _open(session: Session, params: Mapping[str, str],
          deadline: budget.Deadline, heartbeat: float) -> requests.Response:
    """One streaming request (raises the HTTP error of a refusal)."""
    transport = session._transport
    read_timeout = 3 * heartbeat
    left = deadline.remaining()
    if left is not None:
        read_timeout = max(0.05, min(read_timeout, left))
    version = transport._version_for(versions.ALLOCATIONS)
    response: requests.Response = transport.adapter.request(
        transport.url(extension_names.WATCH_PATH), "GET",
        raise_exc=False, stream=True, params=dict(params),
        microversion=versions.format_version(version),
        headers={"Accept": MEDIA_TYPE,
                 extension_names.EXTENSION_HEADER: extension_names.WATCH},
        timeout=(min(10.0, read_timeout), read_timeout))
    if response.status_code >= 400:
        response.content  # noqa: B018 - read the error body
        raise transport._error(response)
    return response


def watch_allocations(
    session: Session,
    *,
    since: int | None = None,
    timeout: float | None = None,
    deadline: budget.Deadline | None = None,
    on_start: Callable[[int], bool] | None = None,
    **filters: str | None,
) -> Iterator[AllocationChange]:
    """The work of :meth:`Client.watch_allocations` (see there)."""
    entry = advertised(session._v1_document())
    if entry is None:
        raise exceptions.ExtensionNotSupported(
            "The server does not offer the change stream (watch "
            "extension); poll the allocations instead.")
    unknown = set(filters) - set(FILTERS)
    if unknown:
        raise exceptions.InvalidArgument(
            f"Unknown filters: {', '.join(sorted(unknown))}")
    heartbeat = float(entry.get("heartbeat") or DEFAULT_HEARTBEAT)
    deadline = deadline or session.deadline(timeout)
    query = {name: str(value) for name, value in filters.items()
             if value is not None}
    cursor = since
    started = False
    while not deadline.expired():
        params = dict(query)
        if cursor is not None:
            params["since"] = str(cursor)
        try:
            response = _open(session, params, deadline, heartbeat)
        except (exceptions.ConnectionFailed, exceptions.ServiceUnavailable,
                requests.RequestException, OSError):
            if not deadline.allows(REOPEN_DELAY):
                return
            session.sleep(REOPEN_DELAY)
            continue
        except Exception as exc:
            if _keystoneauth_connection_error(exc) and \
                    deadline.allows(REOPEN_DELAY):
                session.sleep(REOPEN_DELAY)
                continue
            raise
        with contextlib.closing(response):
            for line in _lines(response):
                cursor = int(line["cursor"])
                kind = line.get("type")
                if kind == "hello" and not started:
                    started = True
                    if on_start is not None and on_start(cursor):
                        return
                elif kind == "change":
                    yield AllocationChange(
                        cursor, str(line["op"]),
                        Allocation.from_wire(line["allocation"]))
                if deadline.expired():
                    return


def _keystoneauth_connection_error(exc: BaseException) -> bool:
    from keystoneauth1 import exceptions as ks_exc

    return isinstance(exc, ks_exc.ConnectionError)


def _lines(response: requests.Response) -> Iterator[dict[str, Any]]:
    """The stream's lines until it ends or breaks (a timeout included)."""
    try:
        for raw in response.iter_lines():
            if raw:
                value = json.loads(raw)
                if isinstance(value, dict) and "cursor" in value:
                    yield value
    except (requests.RequestException, OSError, ValueError,
            AttributeError):
        return


class NotOffered(Exception):
    """The stream cannot be used for this wait (poll instead)."""


def wait_for_allocation(session: Session, ident: str,
                        initial: Allocation | None,
                        deadline: budget.Deadline) -> Allocation:
    """Wait on the stream until the allocation leaves ``allocating``;
    :class:`NotOffered` when the server refuses the stream (the caller
    polls).  One ``GET`` when the stream starts (what changed before it
    is not in it) and one at the end (the whole resource)."""
    from baremetal_allocclient.v1 import allocations, waiting

    uuid = initial.uuid if initial is not None else None
    if uuid is None:
        initial = allocations.get(session, ident, deadline)
        uuid = str(initial.uuid)
    latest: list[Allocation] = [initial] if initial is not None else []

    def settled_at_start(_cursor: int) -> bool:
        latest.append(allocations.get(session, uuid, deadline))
        return latest[-1].state != waiting.ALLOCATING

    try:
        for change in watch_allocations(session, deadline=deadline,
                                        on_start=settled_at_start,
                                        uuid=uuid):
            if change.op == "deleted":
                raise exceptions.NotFound(
                    f"Allocation {uuid} was deleted while waited for.",
                    status_code=404)
            latest.append(change.allocation)
            if change.allocation.state != waiting.ALLOCATING:
                break
    except (exceptions.ExtensionNotSupported, exceptions.ServerError) as exc:
        raise NotOffered(str(exc)) from exc
    except exceptions.HttpError as exc:
        if exc.status_code in (404, 406):
            raise NotOffered(str(exc)) from exc
        raise
    last = latest[-1] if latest else None
    if last is None or last.state == waiting.ALLOCATING:
        known = [last] if last is not None else []
        raise exceptions.WaitTimeout(known, deadline.seconds or 0.0,
                                     results=known)
    try:
        final = allocations.get(session, uuid, deadline)
    except exceptions.DeadlineExceeded:
        final = last  # settled; the whole resource was not read in time
    if final.state == waiting.ERROR:
        raise exceptions.AllocationFailed(final, final.last_error)
    return final
