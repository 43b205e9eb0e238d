"""The small interface every allocation backend offers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import ColumnElement

from baremetal_allocclient.server.logic.selection import Filter, Request


@dataclass(frozen=True)
class Job:
    """One ``allocating`` allocation a worker hands to the backend."""

    allocation_id: int
    allocation_uuid: str
    request: Request
    filters: tuple[Filter, ...]
    affinity: str


class Backend(Protocol):
    """Selects and claims a node for an allocation; reports capacity."""

    name: str

    def start(self) -> None:
        """Begin background work (sync); called once by ``serve``."""

    def stop(self) -> None:
        """End background work."""

    def allocate(self, job: Job) -> None:
        """Give the allocation a node (``active``) or record why not
        (``error``).  Raises only what the worker retries (database
        unavailable) or reports as unexpected."""

    def capacity(
        self,
        resource_class: str | None,
        visible: ColumnElement[bool] | None = None,
    ) -> Sequence[dict[str, Any]]:
        """Per resource class: total, allocated, reserved (by reason),
        free; ``visible`` restricts the nodes counted."""
