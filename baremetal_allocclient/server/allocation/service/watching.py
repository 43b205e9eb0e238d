"""The watch extension's service: where a watch starts and what it
sees (scoped and filtered as the allocation list is)."""

from __future__ import annotations

from dataclasses import dataclass

from baremetal_allocclient.server.allocation import lookup
from baremetal_allocclient.server.allocation.watch import events, log
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.domain import policy
from baremetal_allocclient.server.domain.errors import Gone
from baremetal_allocclient.server.domain.principal import Principal


@dataclass(frozen=True)
class Asked:
    """A watch request's cursor (None: from now) and filters."""

    since: int | None = None
    resource_class: str | None = None
    state: str | None = None
    owner: str | None = None
    node: str | None = None
    name: str | None = None
    group: str | None = None
    uuid: str | None = None


def cursor(db: Database) -> int:
    """The cursor a list made now is at: read before the list, so every
    change the list does not show comes after it."""
    return log.position(db).last


def start(db: Database, who: Principal,
          asked: Asked) -> tuple[events.Filter, int]:
    """The filter of a watch by ``who`` and the cursor it starts after.

    A member asking for another project's owner is ``Forbidden``; an
    unknown or hidden node is ``Invalid``; a cursor older than the
    retention (or ahead of the log: the database was replaced) is
    :class:`Gone`: list again and watch from the list's cursor."""
    owner = policy.list_owner(who, asked.owner)
    node_uuid = None
    if asked.node is not None:
        with db.read() as session:
            node_uuid = lookup.node_as_filter_argument(
                session, asked.node, who).uuid
    position = log.position(db)
    since = position.last if asked.since is None else asked.since
    if since < position.pruned_through:
        raise Gone(f"Cursor {since} is older than the changes this server "
                   f"keeps (from {position.pruned_through + 1}); list the "
                   f"allocations again and watch from the list's cursor.")
    if since > position.last:
        raise Gone(f"Cursor {since} is ahead of this server's changes (at "
                   f"{position.last}); list the allocations again and "
                   f"watch from the list's cursor.")
    return events.Filter(
        who=who, resource_class=asked.resource_class, state=asked.state,
        owner=owner, node_uuid=node_uuid, name=asked.name,
        group=asked.group, uuid=asked.uuid), since
