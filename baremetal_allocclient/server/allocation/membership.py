"""This process as a conductor: registration, heartbeat, graceful leave."""

from __future__ import annotations

import datetime
import logging
import threading
import time

from baremetal_allocclient.server.allocation import conductors
from baremetal_allocclient.server.db.engine import (
    Database,
    is_lost_race,
    is_unavailable,
    short_reason,
)

LOG = logging.getLogger(__name__)


class ConductorNameInUse(Exception):
    """Another live process already runs under this conductor name."""


class Membership:
    """Registers ``name``, heartbeats every ``interval`` seconds, and
    marks it offline on a graceful stop."""

    def __init__(
        self, db: Database, name: str, interval: float, timeout: float
    ) -> None:
        self._db = db
        self.name = name
        self.interval = interval
        self.timeout = datetime.timedelta(seconds=timeout)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def join(self) -> None:
        """Register, first waiting out a crashed predecessor's heartbeat.

        A row of the same name that is online with a fresh heartbeat is
        either a process that was just killed (its heartbeat goes stale
        within the timeout) or a second live process with the same name,
        which must not start: both would claim the same allocations.
        Registration is a compare-and-set (:func:`conductors.register`),
        so of two processes starting at once only one gets the name.
        """
        deadline = time.monotonic() + self.timeout.total_seconds() + (
            2 * self.interval
        )
        announced = False
        while not conductors.register(self._db, self.name, self.timeout):
            if time.monotonic() >= deadline:
                raise ConductorNameInUse(
                    f"another live process is registered as conductor "
                    f"{self.name!r} (its heartbeat is fresh); give each "
                    f"process its own --conductor-name"
                )
            if not announced:
                LOG.info(
                    "Conductor %s is still registered as online; waiting "
                    "up to %.0f s for its heartbeat to expire",
                    self.name, self.timeout.total_seconds(),
                )
                announced = True
            time.sleep(min(self.interval, 1.0))
        LOG.info("Registered as conductor %s", self.name)

    def start(self) -> None:
        """Heartbeat in a background thread."""
        self._thread = threading.Thread(
            target=self._loop, name="heartbeat", daemon=True
        )
        self._thread.start()

    def _loop(self) -> None:
        failing = False
        while not self._stop.wait(self.interval):
            try:
                if not conductors.heartbeat(
                    self._db, self.name
                ) and not conductors.register(
                    self._db, self.name, self.timeout
                ):
                    LOG.error("Conductor name %s was taken by another "
                              "process while this one was not "
                              "registered", self.name)
            except Exception as exc:
                if is_lost_race(exc):
                    # Galera: a concurrent registration won at COMMIT;
                    # the next heartbeat tries again.
                    LOG.warning("Heartbeat lost a race with a concurrent "
                                "transaction: %s", short_reason(exc))
                    continue
                if not is_unavailable(exc):
                    LOG.exception("Heartbeat failed")
                elif not failing:
                    LOG.warning("Heartbeat failed, database unavailable: "
                                "%s", short_reason(exc))
                failing = True
                continue
            if failing:
                LOG.info("Heartbeat restored")
                failing = False

    def leave(self) -> None:
        """Stop heartbeating and mark this conductor offline, so other
        processes take over what it left without waiting for the
        timeout.  A database outage here is logged, not raised: the
        heartbeat then simply expires."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            conductors.mark_offline(self._db, self.name)
        except Exception as exc:
            LOG.warning("Could not mark conductor %s offline: %s",
                        self.name, short_reason(exc))
            return
        LOG.info("Conductor %s is offline", self.name)
