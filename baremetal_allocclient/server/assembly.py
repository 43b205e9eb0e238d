"""The WSGI application and its services, built from ``serve``'s options.

``baremetal-alloc-server serve`` and the tests' in-process server both build
through :func:`build` and :func:`front_end`, so a test served in-process runs
the same wiring as the command.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from baremetal_allocclient.server import security
from baremetal_allocclient.server.allocation.backends import (
    options as backend_options,
)
from baremetal_allocclient.server.allocation.backends.base import Backend
from baremetal_allocclient.server.allocation.backends.ironic import (
    IronicBackend,
)
from baremetal_allocclient.server.allocation.lease_expiry import LeaseExpiry
from baremetal_allocclient.server.allocation.line.rounds import QueueRounds
from baremetal_allocclient.server.allocation.membership import Membership
from baremetal_allocclient.server.allocation.takeover import Takeover
from baremetal_allocclient.server.allocation.wait_permits import (
    WaitPermits,
    waiting_capacity,
)
from baremetal_allocclient.server.allocation.watch.feed import (
    Feed,
    FeedOptions,
)
from baremetal_allocclient.server.allocation.watch.hub import Hub
from baremetal_allocclient.server.allocation.workers import AllocationWorkers
from baremetal_allocclient.server.api.limits import MAX_BODY
from baremetal_allocclient.server.api.paths import CanonicalPaths
from baremetal_allocclient.server.app import Application
from baremetal_allocclient.server.broker.passthrough import Passthrough
from baremetal_allocclient.server.db.engine import Database, is_unavailable
from baremetal_allocclient.server.db.models import utcnow
from baremetal_allocclient.server.domain.recording import Recorder
from baremetal_allocclient.server.frontend import options as frontend_options
from baremetal_allocclient.server.frontend.server import FrontEnd
from baremetal_allocclient.server.ironic.fake_hardware import FakeHardware
from baremetal_allocclient.server.metrics import endpoints, health
from baremetal_allocclient.server.metrics.endpoints import Metrics
from baremetal_allocclient.server.services import Services

LOG = logging.getLogger("baremetal_allocclient.server")
LISTEN_BACKLOG = 1024
RESUME_RETRY = 5  # seconds between resume attempts while the DB is down


@dataclass
class Assembly:
    """One conductor: the wrapped application and the services behind it."""

    db: Database
    setup: security.SecuritySetup
    backend: Backend
    membership: Membership
    workers: AllocationWorkers
    rounds: QueueRounds | None
    takeover: Takeover
    hardware: FakeHardware
    expiry: LeaseExpiry
    watch: Feed | None
    app: Any
    started: datetime.datetime
    recorder: Recorder

    def start(self) -> None:
        """Start the background services (the membership already runs);
        nothing here waits for the database, which may be unreachable
        while the front end already answers."""
        # In front of a real Ironic, Ironic drives the nodes: the fake
        # hardware has no transition of its own to finish.
        hardware = None if isinstance(self.backend, IronicBackend) \
            else self.hardware
        threading.Thread(
            target=_resume, args=(self.workers, hardware, self.started),
            name="resume", daemon=True,
        ).start()
        self.takeover.start()
        self.expiry.start()
        if self.rounds is not None:
            self.rounds.start()
        self.backend.start()
        if self.watch is not None:
            self.watch.start()

    def stop(self) -> None:
        """No new take-overs; running allocations finish, queued ones stay
        ``allocating`` under this name, and leaving lets others take them
        over at once."""
        self.takeover.stop()
        self.expiry.stop()
        if self.rounds is not None:
            self.rounds.stop()
        self.workers.shutdown()
        self.backend.stop()
        self.hardware.shutdown()
        if self.watch is not None:
            self.watch.stop()
        self.membership.leave()


def build(db: Database, args: argparse.Namespace) -> Assembly:
    """Join the conductors and wire the services of ``args``.

    Raises :class:`security.SecurityConfigError`,
    :class:`backend_options.BackendConfigError`, ``SchemaOutOfDate``,
    ``ConductorNameInUse`` or SQLAlchemy's ``DBAPIError``.
    """
    setup = security.configure(args)
    backend = backend_options.build(db, args)
    if args.upgrade:
        db.upgrade()
    db.check_schema()
    membership = Membership(
        db, args.conductor_name, args.heartbeat_interval,
        args.heartbeat_timeout,
    )
    membership.join()
    started = utcnow()
    membership.start()
    metrics = Metrics(db, args.conductor_name, args.audit_json)
    recorder = metrics.instruments
    workers = AllocationWorkers(
        db, args.conductor_name, args.workers, backlog=args.pending,
        allocation_delay=args.allocation_delay, backend=backend,
        recorder=recorder,
    )
    # Waiting in line needs the database's reservation, which the broker
    # makes too after Ironic's claim (the Placement backend does not
    # offer it; see doc/source/explanation/lifecycle.rst).
    rounds = (QueueRounds(db, workers, args.queue_interval,
                          args.max_queue_wait)
              if backend.name in ("database", "ironic") else None)
    if rounds is not None and isinstance(backend, IronicBackend):
        # A node Ironic freed is offered to the line at once.
        wake = rounds.wake
        backend.sync.on_released = lambda _released: wake()
    takeover = Takeover(
        db, workers, args.heartbeat_timeout, args.takeover_interval,
        wake_queue=rounds.wake if rounds is not None else None,
    )
    hardware = FakeHardware(db, step_delay=args.step_delay,
                            recorder=recorder)
    expiry = LeaseExpiry(db, hardware, args.expire_leases,
                         undeploy=args.expire_leases_undeploy,
                         recorder=recorder)
    watch = _watch(db, args)
    app = setup.wrap(Application(Services(
        db, workers, hardware, args.conductor_name, backend,
        max_prefer_wait=args.max_prefer_wait,
        waiting=WaitPermits(waiting_capacity(args.threads)),
        lease_expiry=args.expire_leases,
        lease_undeploy=args.expire_leases_undeploy,
        queue=rounds,
        metrics=metrics,
        passthrough=_passthrough(backend),
        default_order=backend_options.default_order(args),
        watch=watch,
    )))
    # Ironic's paths (no version prefix, ".json"), before authentication
    # looks at them.
    app = CanonicalPaths(app, unversioned=(endpoints.PATH,))
    # Public, as in Ironic: answered before authentication.
    app = endpoints.healthcheck(app, health.checker(db, workers),
                                args.healthcheck_disable_file)
    return Assembly(db, setup, backend, membership, workers, rounds,
                    takeover, hardware, expiry, watch, app, started,
                    recorder)


def _watch(db: Database, args: argparse.Namespace) -> Feed | None:
    """The change stream's feed and hub (not started); None when
    ``watch_max_watchers`` is 0."""
    if not args.watch_max_watchers:
        return None
    hub = Hub(args.watch_max_watchers, args.watch_heartbeat,
              args.watch_buffer_limit)
    return Feed(db, hub, FeedOptions(interval=args.watch_poll_interval,
                                     retention=args.watch_retention))


def _passthrough(backend: Backend) -> Passthrough | None:
    """In front of a real Ironic, the routes the server does not own go
    there."""
    if not isinstance(backend, IronicBackend) or backend.client.endpoint \
            is None:
        return None
    return Passthrough(backend.client.endpoint, backend.sync)


def front_end(assembly: Assembly, args: argparse.Namespace) -> FrontEnd:
    """The HTTP server of ``args`` over the assembly's application."""
    return FrontEnd(
        assembly.app, args.host, args.port, frontend_options.from_args(args),
        # A burst of clients connecting at once must queue, not be reset.
        backlog=LISTEN_BACKLOG,
        max_header=security.MAX_HEADER_BYTES,
        # The application answers a body over MAX_BODY with its own 413;
        # the front end refuses (413) to buffer one over twice that.
        max_body=2 * MAX_BODY,
        tls_context=assembly.setup.tls_context,
        recorder=assembly.recorder,
    )


def _resume(workers: AllocationWorkers, hardware: FakeHardware | None,
            started: datetime.datetime) -> None:
    """Finish the node transitions a restart interrupted and queue this
    conductor's leftover allocations, in the background: both wait for
    the database while it is unreachable, and the second for free worker
    slots when there are more leftovers than slots."""
    steps: list[Callable[[], object]] = (
        [] if hardware is None else [hardware.resume])
    steps.append(lambda: workers.resume(created_before=started))
    for step in steps:
        _until_done(step)


def _until_done(step: Callable[[], object]) -> None:
    """Run ``step`` again every :data:`RESUME_RETRY` seconds while the
    database is unavailable."""
    while True:
        try:
            step()
            return
        except Exception as exc:
            if not is_unavailable(exc):
                raise
        LOG.warning("Resume postponed, database unavailable; retrying in "
                    "%d s", RESUME_RETRY)
        time.sleep(RESUME_RETRY)
