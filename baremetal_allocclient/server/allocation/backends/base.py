"""The small interface every allocation backend offers."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import ColumnElement

from baremetal_allocclient.server.allocation.release.refusals import Holder
from baremetal_allocclient.server.allocation.selection import (
    AnyFilter,
    Request,
)


@dataclass(frozen=True)
class Job:
    """One ``allocating`` allocation a worker hands to the backend."""

    allocation_id: int
    allocation_uuid: str
    request: Request
    filters: tuple[AnyFilter, ...]
    affinity: str
    #: Set when the allocation waits in line for capacity: without a
    #: node it stays ``allocating`` (the backend returns None) until
    #: this time, then fails.
    queue_deadline: datetime.datetime | None = None
    created_at: datetime.datetime | None = None


@dataclass(frozen=True)
class Settled:
    """How a backend left an allocation: enough for the API to answer a
    client that asked to wait (``Prefer: wait``) without reading the row
    back."""

    state: str  # "active" or "error"
    node_uuid: str | None
    last_error: str | None
    updated_at: datetime.datetime
    #: ``last_error`` with the funnel, for clients that opted in.
    funnel_error: str | None = None
    #: For a failure: what emptied the set (``selection.Why.step``).
    step: str | None = None


class Backend(Protocol):
    """Selects and claims a node for an allocation; reports capacity."""

    name: str
    #: True when ``allocate`` may wait on something besides the database
    #: (a remote service, a pause before retrying): it then always runs
    #: on a worker thread, never on a request thread (see
    #: ``AllocationWorkers.settle``).
    blocking: bool
    @property
    def holder(self) -> Holder | None:
        """The service that holds the nodes and decides releases; None:
        the server's database does."""

    def start(self) -> None:
        """Begin background work (sync); called once by ``serve``."""

    def stop(self) -> None:
        """End background work."""

    def allocate(self, job: Job) -> Settled | None:
        """Give the allocation a node (``active``) or record why not
        (``error``), and say which; None when the backend left the row
        alone (deleted or taken over meanwhile) or cannot say, so the
        caller reads it.  Raises only what the worker retries (database
        unavailable) or reports as unexpected."""

    def capacity(
        self,
        resource_class: str | None,
        visible: ColumnElement[bool] | None = None,
    ) -> Sequence[dict[str, Any]]:
        """Per resource class: total, allocated, reserved (by reason),
        free; ``visible`` restricts the nodes counted."""
