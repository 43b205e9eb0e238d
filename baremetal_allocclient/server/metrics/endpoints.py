"""``GET /metrics`` (an admin's: fleet-wide figures) and
``/healthcheck`` (public, as in Ironic).

:class:`Metrics` is one process's registry: its
:class:`~.instruments.Instruments` and the fleet's gauges
(:class:`~.fleet.FleetCollector`).  ``/metrics`` answers it in the
Prometheus text format or OpenMetrics, as the scraper asks
(prometheus_client's exposition); a member gets
403, as for any admin-only route: the figures count every project's
nodes and allocations.

``/healthcheck`` is oslo.middleware's ``Healthcheck`` around the
application, with this server's check (:mod:`.health`) and
``disable_by_file`` for draining: 200 ``OK``, or 503 with a reason that
names no value.
"""

from __future__ import annotations

from typing import Any

from prometheus_client.exposition import choose_encoder

from baremetal_allocclient.server.api.context import Context, principal
from baremetal_allocclient.server.api.errors import ApiError
from baremetal_allocclient.server.api.http import Response
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.metrics.audit import AuditLog
from baremetal_allocclient.server.metrics.fleet import FleetCollector
from baremetal_allocclient.server.metrics.instruments import Instruments

PATH = "/metrics"
HEALTH_PATH = "/healthcheck"


class Metrics:
    """One process's metrics and the fleet's."""

    def __init__(self, db: Database, conductor: str,
                 audit_json: bool = False) -> None:
        self.instruments = Instruments(conductor, AuditLog(audit_json))
        self.registry = self.instruments.registry
        self.registry.register(FleetCollector(db))

    def exposition(self, accept: str | None) -> tuple[bytes, str]:
        """Every metric, in the format ``accept`` asks for (OpenMetrics
        or the Prometheus text format), and its content type."""
        encode, content_type = choose_encoder(accept or "")
        return encode(self.registry), content_type


def serve_metrics(ctx: Context) -> Response:
    """``GET /metrics``: the registry of this process (admins only)."""
    if not principal(ctx).admin:
        raise ApiError(403, "Only an admin may read the metrics.")
    metrics: Metrics | None = getattr(ctx.services, "metrics", None)
    if metrics is None:
        raise ApiError(404, "The resource could not be found.")
    body, content_type = metrics.exposition(
        ctx.request.headers.get("Accept"))
    return Response(body, content_type=content_type)


def healthcheck(app: Any, check: Any, disable_file: str | None) -> Any:
    """``app``, with :data:`HEALTH_PATH` answered by oslo.middleware's
    ``Healthcheck``: ``check`` (:mod:`.health`) first, then
    ``disable_file`` (its presence answers 503 "DISABLED BY FILE")."""
    from oslo_middleware.healthcheck import Healthcheck

    backends = ["baremetal_alloc"] + (["disable_by_file"] if disable_file
                                      else [])
    conf: dict[str, Any] = {"detailed": False,
                            "backends": ",".join(backends),
                            "baremetal_alloc.check": check}
    if disable_file:
        conf["disable_by_file_path"] = disable_file
    health = Healthcheck(None, conf)

    def route(environ: dict[str, Any], start_response: Any) -> Any:
        path = (environ.get("PATH_INFO") or "/").rstrip("/")
        if path == HEALTH_PATH:
            return health(environ, start_response)
        return app(environ, start_response)
    return route
