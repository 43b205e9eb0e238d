"""This process's counters and histograms, on a registry of its own.

Every series carries the conductor's name (``conductor``), so the
figures of several ``serve`` processes add up in Prometheus and each
one's can be told apart.  Label values are bounded: route templates,
methods, statuses, states, funnel steps, paths of a release, kinds of
database error; never a UUID or a name.

The wings are given it as a ``domain.recording.Recorder`` and call its
methods; nothing here is read back by the server.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Iterator
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
)

from baremetal_allocclient.server.domain.recording import Change
from baremetal_allocclient.server.metrics.audit import AuditLog

PREFIX = "baremetal_alloc"
#: Seconds: from a create to its allocation's ``active`` or ``error``.
ALLOCATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                      5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
#: Seconds of one HTTP request (a ``Prefer: wait`` create holds up to 10).
REQUEST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                   0.5, 1.0, 2.5, 5.0, 10.0)


def _seconds(began: datetime.datetime | None,
             ended: datetime.datetime) -> float | None:
    if began is None:
        return None
    return max(0.0, (ended - began).total_seconds())


class Instruments:
    """The metrics one process records, for conductor ``conductor``."""

    def __init__(self, conductor: str, audit: AuditLog | None = None
                 ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.conductor = conductor
        self._audit = audit or AuditLog()
        labels = ("conductor",)

        def counter(name: str, text: str, *more: str) -> Counter:
            return Counter(f"{PREFIX}_{name}", text, labels + more,
                           registry=self.registry)

        self._requests = counter(
            "http_requests", "HTTP requests answered, by route template, "
            "method and status", "route", "method", "status")
        self._request_seconds = Histogram(
            f"{PREFIX}_http_request_seconds", "Time to answer an HTTP "
            "request, by route template and method",
            (*labels, "route", "method"), buckets=REQUEST_BUCKETS,
            registry=self.registry)
        self._in_flight = Gauge(
            f"{PREFIX}_http_requests_in_flight", "HTTP requests being "
            "answered now", labels, registry=self.registry)
        self._settled = counter(
            "allocations_settled", "Allocations this process settled, by "
            "the state they settled in", "state")
        self._allocation_seconds = Histogram(
            f"{PREFIX}_allocation_seconds", "Time from an allocation's "
            "create to its active or error state (settled here)",
            (*labels, "state"), buckets=ALLOCATION_BUCKETS,
            registry=self.registry)
        self._line_seconds = Histogram(
            f"{PREFIX}_line_wait_seconds", "Time an allocation waited in "
            "line before it settled", (*labels, "state"),
            buckets=ALLOCATION_BUCKETS, registry=self.registry)
        self._failures = counter(
            "allocation_failures", "Allocations failed here, by the "
            "funnel step that emptied the set (taken: nodes passed every "
            "step but others took them; queue_deadline; unexpected)",
            "step")
        self._releases = counter(
            "releases", "Nodes released, by path (api, node_api, "
            "lease_expiry, undeploy, instance_uuid, node_delete)", "path")
        self._leases = counter(
            "lease_expiries", "Expired leases acted on, by action "
            "(release, undeploy, deployed: left in place)", "action")
        self._renewals = counter(
            "lease_renewals", "Leases renewed (the lease end changed by "
            "a PATCH of extra)")
        self._takeovers = counter(
            "takeover_rounds", "Take-over rounds that claimed something")
        self._orphans = counter(
            "orphans_claimed", "Allocations of dead conductors claimed")
        self._db_errors = counter(
            "database_errors", "Database errors met while answering, by "
            "kind (unavailable, conflict: deadlock or certification "
            "failure, retried, commit_unknown)", "kind")
        self._request_series: dict[tuple[str, str, int], tuple[Any, Any]] = {}
        self._in_flight_now = self._in_flight.labels(conductor)
        self._closed = counter(
            "connections_closed", "Connections the front end closed on "
            "its own, by reason (request_timeout: answered 408; "
            "idle_timeout; unread_answer: a request thread waited for a "
            "client taking nothing; refused: a malformed request or one "
            "over a size limit, answered 400, 413 or 431)", "reason")

    # -- HTTP ------------------------------------------------------------
    def request(self, route: str, method: str, status: int,
                seconds: float) -> None:
        """One HTTP request answered (the series of each route, method
        and status are looked up once: prometheus_client's ``labels()``
        costs more than counting)."""
        key = (route, method, status)
        series = self._request_series.get(key)
        if series is None:
            series = self._request_series.setdefault(key, (
                self._requests.labels(self.conductor, route, method,
                                      str(status)),
                self._request_seconds.labels(self.conductor, route,
                                             method)))
        series[0].inc()
        series[1].observe(seconds)

    @contextlib.contextmanager
    def in_flight(self) -> Iterator[None]:
        """A request being answered (a context's body)."""
        gauge = self._in_flight_now
        gauge.inc()
        try:
            yield
        finally:
            gauge.dec()

    # -- allocations -----------------------------------------------------
    def settled(self, state: str, created_at: datetime.datetime | None,
                queued: bool, at: datetime.datetime) -> None:
        """An allocation settled (``active`` or ``error``) here."""
        self._settled.labels(self.conductor, state).inc()
        seconds = _seconds(created_at, at)
        if seconds is None:
            return
        self._allocation_seconds.labels(self.conductor,
                                        state).observe(seconds)
        if queued:
            self._line_seconds.labels(self.conductor,
                                      state).observe(seconds)

    def failed(self, step: str) -> None:
        """An allocation failed here; ``step`` emptied the set."""
        self._failures.labels(self.conductor, step).inc()

    def released(self, path: str) -> None:
        """A node was released (committed) through ``path``."""
        self._releases.labels(self.conductor, path).inc()

    def lease_expired(self, action: str) -> None:
        """An expired lease was acted on."""
        self._leases.labels(self.conductor, action).inc()

    def lease_renewed(self) -> None:
        """A lease's end moved (committed)."""
        self._renewals.labels(self.conductor).inc()

    def took_over(self, claimed: int) -> None:
        """A take-over round claimed ``claimed`` allocations."""
        if claimed:
            self._takeovers.labels(self.conductor).inc()
            self._orphans.labels(self.conductor).inc(claimed)

    # -- the database and the front end ------------------------------------
    def database_error(self, kind: str) -> None:
        """A database error of ``kind`` while answering."""
        self._db_errors.labels(self.conductor, kind).inc()

    def connection_closed(self, reason: str) -> None:
        """The front end closed a connection on its own."""
        self._closed.labels(self.conductor, reason).inc()

    # -- the audit trail ----------------------------------------------------
    def changed(self, change: Change) -> None:
        """An allocation changed: its audit line."""
        self._audit.write(change)
