"""This server's extensions of the Ironic API, as the allocation wing
offers them: what ``GET /v1`` advertises, and the extension fields of a
create.

Plain Ironic clients never see an extension: the groups extension's
``POST /v1/allocation_groups`` answers 404 unless the request names it in
the header (doc/source/explanation/lifecycle.rst); the constraints extension's
``constraints`` field of ``POST /v1/allocations`` is accepted only when
the request names the extension in the ``X-Baremetal-Alloc-Extensions``
header (otherwise the body is checked exactly as Ironic checks it), and
``GET /v1`` lists the extensions under ``extensions``, a key Ironic does
not send.  A failed allocation's ``last_error`` is Ironic's text unless
the request opted into the constraints extension, which adds the
selection funnel.  Whether a request opted in is asked of
``api/extensions.py`` (both wings do).  Wire format:
doc/source/howto/choosing-nodes.rst.
"""

from __future__ import annotations

import datetime
from typing import Any

from baremetal_allocclient import constraints, extension_names, leases
from baremetal_allocclient import groups as group_model
from baremetal_allocclient import spread as spread_model
from baremetal_allocclient.server.allocation.handlers import capacity
from baremetal_allocclient.server.allocation.handlers.services import (
    AllocationServices,
    allocation_services,
)
from baremetal_allocclient.server.allocation.line import waiting
from baremetal_allocclient.server.allocation.watch.events import MEDIA_TYPE
from baremetal_allocclient.server.allocation.watch.feed import Feed
from baremetal_allocclient.server.api.context import Context
from baremetal_allocclient.server.api.errors import bad_request
from baremetal_allocclient.server.api.extensions import QUEUE

#: Version of the queue extension's wire format.
QUEUE_VERSION = 1
#: Version of the watch extension's wire format.
WATCH_VERSION = 1
#: The header of an allocation list (opted into the watch extension)
#: giving the cursor to watch from.
WATCH_CURSOR_HEADER = extension_names.WATCH_CURSOR_HEADER
#: Version of the constraints extension's wire format.
CONSTRAINTS_VERSION = 1
#: Version of the leases extension: 2, the ``lease`` field (1 read two
#: keys of ``extra``, which now holds only what the user wrote).
LEASES_VERSION = 2


def queue_deadline(ctx: Context, body: dict[str, Any],
                   now: datetime.datetime) -> datetime.datetime | None:
    """The queue deadline a (schema-checked) create asks for; None
    without a ``queue`` field; 400 when it cannot be honoured."""
    document = body.get("queue")
    if document is None:
        return None
    rounds = allocation_services(ctx).queue
    if rounds is None:
        raise bad_request("Waiting in line (the queue extension) is not "
                          "available with this server's backend")
    if body.get("node"):
        raise bad_request("Waiting in line does not apply to a backfill")
    try:
        return waiting.deadline_for(now, document, rounds.max_wait)
    except waiting.QueueRequestError as exc:
        raise bad_request(f"Invalid queue: {exc}") from None


def parse_constraints(body: dict[str, Any]) -> constraints.Constraints:
    """The (schema-checked) ``constraints`` of a body; 400 when they
    cannot be evaluated."""
    document = body.get("constraints") or {}
    try:
        return constraints.from_wire(document)
    except constraints.ConstraintError as exc:
        raise bad_request(f"Invalid constraints: {exc}") from None


def lease_advertisement(
        services: AllocationServices | None) -> dict[str, Any]:
    """The ``leases`` entry: the header and field, and whether this
    process expires leases by itself (``serve --expire-leases``)."""
    interval = services.lease_expiry if services is not None else 0.0
    return {
        "version": LEASES_VERSION,
        "header": constraints.EXTENSION_HEADER,
        "field": leases.FIELD,
        "expiring": interval > 0,
        "interval": interval if interval > 0 else None,
        "undeploy": bool(services is not None and services.lease_undeploy),
    }


def watch_advertisement(base_url: str, feed: Feed) -> dict[str, Any]:
    """The ``watch`` entry: where to watch, the wire format, and the
    limits (heartbeat, retention, watchers)."""
    return {
        "version": WATCH_VERSION,
        "header": constraints.EXTENSION_HEADER,
        "href": f"{base_url}{extension_names.WATCH_PATH}",
        "media_type": MEDIA_TYPE,
        "cursor_header": WATCH_CURSOR_HEADER,
        "heartbeat": feed.hub.heartbeat,
        "retention": feed.options.retention,
        "max_watchers": feed.hub.max_watchers,
    }


def advertisement(base_url: str, services: AllocationServices | None = None,
                  groups: bool = True,
                  queue_max_wait: float | None = None) -> dict[str, Any]:
    """The ``extensions`` entry of ``GET /v1`` (``groups``: whether the
    backend reserves groups in one transaction; ``queue_max_wait``: the
    queue extension is offered, with this longest wait)."""
    found: dict[str, Any] = {
        leases.EXTENSION: lease_advertisement(services),
        constraints.EXTENSION: {
            "version": CONSTRAINTS_VERSION,
            "header": constraints.EXTENSION_HEADER,
            "explain": f"{base_url}{constraints.EXPLAIN_PATH}",
            # A request opted into this extension reads last_error with
            # the selection funnel; any other reads Ironic's text.
            "funnel_in_last_error": True,
            # What it understands beyond version 1's first operators.
            "features": sorted(constraints.FEATURES),
        },
        "capacity": {"href": f"{base_url}{capacity.PATH}"},
    }
    if groups:
        found[group_model.EXTENSION] = {
            "version": group_model.VERSION,
            "header": constraints.EXTENSION_HEADER,
            "href": f"{base_url}{group_model.PATH}",
            "field": group_model.FIELD,
            # Failure domains a group may spread over, decided in its
            # one transaction.
            "spread": list(spread_model.ADVERTISED),
        }
    feed = None if services is None else services.watch
    if feed is not None:
        found[extension_names.WATCH] = watch_advertisement(base_url, feed)
    if queue_max_wait is not None:
        found[QUEUE] = {
            "version": QUEUE_VERSION,
            "header": constraints.EXTENSION_HEADER,
            "max_timeout": queue_max_wait,
        }
    return found
