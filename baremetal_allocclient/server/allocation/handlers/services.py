"""What the allocation wing reads of the long-lived objects behind a
request (``Context.services``), typed.

The shared plumbing knows only their database
(``api.context.SharedServices``); the object itself is built by the
wiring (``server/services.py``, where type checking proves it is an
:class:`AllocationServices`).  Not the service layer: that is
``allocation/service/``.
"""

from __future__ import annotations

from typing import Protocol, cast

from baremetal_allocclient.constraints import Order
from baremetal_allocclient.server.allocation.backends.base import Backend
from baremetal_allocclient.server.allocation.line.rounds import QueueRounds
from baremetal_allocclient.server.allocation.wait_permits import WaitPermits
from baremetal_allocclient.server.allocation.watch.feed import Feed
from baremetal_allocclient.server.allocation.workers import AllocationWorkers
from baremetal_allocclient.server.api.context import Context
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.domain.recording import Recorder


class AllocationServices(Protocol):
    """The allocation wing's view of ``Context.services``."""

    @property
    def db(self) -> Database: ...
    @property
    def workers(self) -> AllocationWorkers: ...
    @property
    def backend(self) -> Backend | None:
        """None: the database backend."""
    @property
    def max_prefer_wait(self) -> float:
        """Ceiling of ``Prefer: wait`` on POST /v1/allocations (s)."""
    @property
    def waiting(self) -> WaitPermits:
        """Request threads ``Prefer: wait`` may hold at once."""
    @property
    def lease_expiry(self) -> float:
        """Seconds between lease expiry rounds; 0: none here."""
    @property
    def lease_undeploy(self) -> bool:
        """Whether lease expiry tears deployed nodes down."""
    @property
    def queue(self) -> QueueRounds | None:
        """Waiting in line; None: not offered (the Placement backend)."""
    @property
    def watch(self) -> Feed | None:
        """The change stream's feed; None: not offered here."""

    @property
    def recorder(self) -> Recorder:
        """Where the services count what they did."""
    @property
    def default_order(self) -> Order:
        """The order of requests that name none."""


def allocation_services(ctx: Context) -> AllocationServices:
    """``ctx.services`` as the allocation wing reads it."""
    return cast(AllocationServices, ctx.services)
