"""The long-lived objects behind every request, wired together.

:class:`Services` is the one object :class:`~baremetal_allocclient.server.
app.Application` hands each request (``Context.services``).  The shared
plumbing reads it as ``api.context.SharedServices`` (the database) and
each wing through its own protocol (``allocation/handlers/services.py``,
``ironic/handlers/services.py``), so neither ``api/`` nor one wing needs
the other's types; type checking proves here that this object is all of
them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from baremetal_allocclient.constraints import Order
from baremetal_allocclient.server.allocation.backends.base import Backend
from baremetal_allocclient.server.allocation.line.rounds import QueueRounds
from baremetal_allocclient.server.allocation.wait_permits import (
    WaitPermits,
    waiting_capacity,
)
from baremetal_allocclient.server.allocation.watch.feed import Feed
from baremetal_allocclient.server.allocation.workers import AllocationWorkers
from baremetal_allocclient.server.api import prefer
from baremetal_allocclient.server.broker.passthrough import Passthrough
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.domain.recording import (
    NOT_RECORDED,
    Recorder,
)
from baremetal_allocclient.server.ironic.fake_hardware import FakeHardware
from baremetal_allocclient.server.metrics.endpoints import Metrics

if TYPE_CHECKING:
    from baremetal_allocclient.server.allocation.handlers.services import (
        AllocationServices,
    )
    from baremetal_allocclient.server.api.context import SharedServices
    from baremetal_allocclient.server.ironic.handlers.services import (
        IronicServices,
    )


@dataclass(frozen=True)
class Services:
    """Long-lived objects shared by all requests."""

    db: Database
    workers: AllocationWorkers
    hardware: FakeHardware
    conductor: str
    backend: Backend | None = None  # None: the database backend
    #: Ceiling of ``Prefer: wait`` on POST /v1/allocations, in seconds.
    max_prefer_wait: float = prefer.DEFAULT_MAX_WAIT
    #: Request threads ``Prefer: wait`` may hold at once.
    waiting: WaitPermits = field(
        default_factory=lambda: WaitPermits(
            waiting_capacity(prefer.DEFAULT_THREADS)
        )
    )
    #: Seconds between lease expiry rounds (``serve --expire-leases``);
    #: 0: this process does not expire leases.
    lease_expiry: float = 0.0
    #: Whether expiry tears deployed nodes down (``--expire-leases-undeploy``).
    lease_undeploy: bool = False
    #: Waiting in line (the queue extension); None: not offered (the
    #: Placement backend).
    queue: QueueRounds | None = None
    #: This process's metrics and the fleet's (``GET /metrics``); None:
    #: not recorded (the application alone, in tests).
    metrics: Metrics | None = None
    #: Routes the server does not own, sent on to the real Ironic it
    #: fronts (``--backend ironic``); None: the server owns every route.
    passthrough: Passthrough | None = None
    #: The order of requests that name none (``serve --default-order``).
    default_order: Order = Order.FIRST_FIT
    #: The change stream (the watch extension); None: not offered.
    watch: Feed | None = None

    @property
    def recorder(self) -> Recorder:
        """Where the services count what they did."""
        return NOT_RECORDED if self.metrics is None \
            else self.metrics.instruments


if TYPE_CHECKING:
    def _read_as(services: Services) -> tuple[
            SharedServices, AllocationServices, IronicServices]:
        """What each reader takes this object for (checked by mypy: the
        wings' ``allocation_services`` and ``ironic_services`` cast to
        their protocol)."""
        return services, services, services
