"""What the services report for the fleet's figures over time and the
audit trail, as a protocol: the wings call a :class:`Recorder` they are
given (the metrics' ``Instruments`` when serving, :data:`NOT_RECORDED`
otherwise) and import nothing of the metrics.  Every call is made after
the change it reports is committed (or, for the database's errors, once
met).

The request a change was made for (its id and principal) is the
context's :data:`REQUEST`, set by the application for each request; a
change a worker or a periodic round makes has none.
"""

from __future__ import annotations

import contextvars
import datetime
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class RequestInfo:
    """Who asked, for the audit trail."""

    request_id: str
    user: str | None
    project: str | None


#: The request being served in this context (None: a worker's or a
#: round's change).
REQUEST: contextvars.ContextVar[RequestInfo | None] = \
    contextvars.ContextVar("baremetal_alloc_request", default=None)


#: The state after a deletion, in a :class:`Change`.
DELETED = "deleted"


@dataclass(frozen=True)
class Change:
    """One committed change of an allocation: its state ``before`` (None:
    created) and ``after`` (``deleted``: gone), by ``actor`` (request,
    worker, line, lease_expiry, undeploy, instance_uuid, node_delete,
    group, backfill)."""

    uuid: str
    owner: str | None
    before: str | None
    after: str
    node: str | None
    actor: str
    #: Fields of a rename or an ``extra`` change (state unchanged).
    fields: tuple[str, ...] = ()


class Recorder(Protocol):
    """Counts and times what the services did."""

    def settled(self, state: str, created_at: datetime.datetime | None,
                queued: bool, at: datetime.datetime) -> None:
        """An allocation settled (``active`` or ``error``) here."""

    def failed(self, step: str) -> None:
        """An allocation failed; ``step`` emptied the set."""

    def released(self, path: str) -> None:
        """A node was released through ``path``."""

    def lease_expired(self, action: str) -> None:
        """An expired lease was acted on."""

    def lease_renewed(self) -> None:
        """A lease's end moved."""

    def took_over(self, claimed: int) -> None:
        """A take-over round claimed ``claimed`` allocations."""

    def database_error(self, kind: str) -> None:
        """A database error of ``kind`` was met."""

    def connection_closed(self, reason: str) -> None:
        """The front end closed a connection on its own (``reason``:
        request_timeout, idle_timeout, unread_answer or refused)."""

    def changed(self, change: Change) -> None:
        """An allocation changed (the audit trail)."""


class _NotRecorded:
    """A :class:`Recorder` that keeps nothing."""

    def settled(self, state: str, created_at: datetime.datetime | None,
                queued: bool, at: datetime.datetime) -> None:
        pass

    def failed(self, step: str) -> None:
        pass

    def released(self, path: str) -> None:
        pass

    def lease_expired(self, action: str) -> None:
        pass

    def lease_renewed(self) -> None:
        pass

    def took_over(self, claimed: int) -> None:
        pass

    def database_error(self, kind: str) -> None:
        pass

    def connection_closed(self, reason: str) -> None:
        pass

    def changed(self, change: Change) -> None:
        pass


#: The recorder of whatever runs without metrics (tests, tools).
NOT_RECORDED: Recorder = _NotRecorded()
