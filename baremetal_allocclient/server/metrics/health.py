"""This server's health, as oslo.middleware's ``Healthcheck`` asks it
(the ``baremetal_alloc`` backend, registered in ``setup.cfg``): the
database answers a trivial read and this process's allocation workers
run.  A failure's reason names nothing else (no exception text)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oslo_middleware.healthcheck import pluginbase

from baremetal_allocclient.server.allocation.workers import AllocationWorkers
from baremetal_allocclient.server.db.engine import Database

OK = "OK"
DATABASE_DOWN = "database unavailable"
WORKERS_STOPPED = "allocation workers stopped"


def checker(db: Database, workers: AllocationWorkers
            ) -> Callable[[], str | None]:
    """What the backend runs: None when healthy, else the reason."""
    def check() -> str | None:
        if workers.stopping:
            return WORKERS_STOPPED
        try:
            with db.read_connection() as conn:
                conn.exec_driver_sql("SELECT 1")
        except Exception:  # any failure to answer: down, for the check
            return DATABASE_DOWN
        return None
    return check


class ServerHealth(pluginbase.HealthcheckBaseExtension):
    """oslo.middleware's backend around :func:`checker`'s check."""

    def __init__(self, oslo_conf: Any, conf: dict[str, Any]) -> None:
        super().__init__(oslo_conf, conf)
        self._check: Callable[[], str | None] = conf["baremetal_alloc.check"]

    def healthcheck(self, server_port: int) -> pluginbase.HealthcheckResult:
        reason = self._check()
        if reason is None:
            return pluginbase.HealthcheckResult(available=True, reason=OK)
        return pluginbase.HealthcheckResult(available=False, reason=reason)
