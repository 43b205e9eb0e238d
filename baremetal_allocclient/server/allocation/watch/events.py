"""A change log row as the watcher sees it, and who may see it (pure).

Wire format (one JSON object a line, ``application/x-ndjson``):

* ``{"type": "hello", "cursor": N}``: the first line; ``N`` is the
  cursor the stream starts after;
* ``{"type": "change", "cursor": N, "op": "created"|"updated"|"deleted",
  "allocation": {...}}``: the allocation as the change left it (as it
  was, for ``deleted``);
* ``{"type": "heartbeat", "cursor": N}``: nothing the watcher may see
  changed up to ``N`` (a resume from ``N`` is as good as one from the
  last change).
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from typing import Any

from baremetal_allocclient.server.db.models import AllocationChange
from baremetal_allocclient.server.domain import policy
from baremetal_allocclient.server.domain.principal import Principal

#: Media type of the stream.
MEDIA_TYPE = "application/x-ndjson"
#: States an allocation can be in.
STATES = ("allocating", "active", "error")


@dataclass(frozen=True)
class Event:
    """One change, with what the filters and the scoping read."""

    cursor: int
    op: str
    uuid: str
    name: str | None
    state: str
    node_uuid: str | None
    owner: str | None
    resource_class: str | None
    group: str | None
    line: bytes


@dataclass(frozen=True)
class Filter:
    """What a watcher asked for (None: anything) and who it is."""

    who: Principal
    resource_class: str | None = None
    state: str | None = None
    owner: str | None = None
    node_uuid: str | None = None
    name: str | None = None
    group: str | None = None
    uuid: str | None = None

    def matches(self, event: Event) -> bool:
        """Whether this watcher is sent ``event``."""
        if not policy.allocation_visible(self.who, event.owner):
            return False
        for wanted, value in (
                (self.resource_class, event.resource_class),
                (self.state, event.state), (self.owner, event.owner),
                (self.node_uuid, event.node_uuid), (self.name, event.name),
                (self.group, event.group), (self.uuid, event.uuid)):
            if wanted is not None and wanted != value:
                return False
        return True


def _moment(value: datetime.datetime | None) -> str | None:
    if value is None:
        return None
    return value.replace(tzinfo=datetime.timezone.utc).isoformat()


def allocation_body(row: AllocationChange) -> dict[str, Any]:
    """The allocation's fields carried by a change."""
    return {
        "uuid": row.uuid, "name": row.name, "state": row.state,
        "node_uuid": row.node_uuid, "owner": row.owner,
        "resource_class": row.resource_class,
        "last_error": row.last_error, "extra": row.extra or {},
        "traits": row.traits or [], "group": row.group_name,
        "lease_expires_at": _moment(row.lease_expires_at),
        "queue_deadline": _moment(row.queue_deadline),
    }


def line(body: dict[str, Any]) -> bytes:
    """One line of the stream."""
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


def event(row: AllocationChange) -> Event:
    """The event of a sequenced log row."""
    assert row.seq is not None
    return Event(
        cursor=row.seq, op=row.op, uuid=row.uuid, name=row.name,
        state=row.state, node_uuid=row.node_uuid, owner=row.owner,
        resource_class=row.resource_class, group=row.group_name,
        line=line({"type": "change", "cursor": row.seq, "op": row.op,
                   "allocation": allocation_body(row)}))


def hello(cursor: int) -> bytes:
    """The first line of a stream."""
    return line({"type": "hello", "cursor": cursor})


def heartbeat(cursor: int) -> bytes:
    """A heartbeat line."""
    return line({"type": "heartbeat", "cursor": cursor})
