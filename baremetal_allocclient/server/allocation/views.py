"""JSON representation of allocations for a given version.

Each field is declared once with the minor version that introduced it;
the same table drives rendering and ``fields=`` validation.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from baremetal_allocclient.server.api import versions
from baremetal_allocclient.server.api.errors import bad_request
from baremetal_allocclient.server.api.views import links, timestamp

ALLOCATION_SORT_KEYS = (
    "id", "uuid", "name", "created_at", "updated_at", "state",
    "resource_class", "owner",
)



def allocation_fields(minor: int) -> list[str]:
    """Allocation fields that exist at this version."""
    names = [
        "uuid", "created_at", "updated_at", "candidate_nodes", "extra",
        "last_error", "name", "owner", "resource_class", "state", "traits",
        "links", "node_uuid",
    ]
    if minor < versions.ALLOCATION_OWNER:
        names.remove("owner")
    return names


def check_allocation_fields(
    fields: Sequence[str] | None, minor: int
) -> None:
    """``fields=`` on allocations: unknown fields are a 400 (Ironic's
    wording, which lists the fields of this version)."""
    if fields is None:
        return
    known = [
        "candidate_nodes", "created_at", "extra", "last_error", "links",
        "name", "node_uuid", "resource_class", "state", "traits",
        "updated_at", "uuid",
    ]
    if minor >= versions.ALLOCATION_OWNER:
        known.append("owner")
    for field in fields:
        if field not in known:
            raise bad_request(
                f"Schema error: '{field}' is not one of {known!r}"
            )


class AllocationRecord(Protocol):
    """What rendering reads of an allocation: an ORM ``Allocation`` or
    a row of its columns."""

    @property
    def uuid(self) -> str: ...
    @property
    def created_at(self) -> datetime.datetime: ...
    @property
    def updated_at(self) -> datetime.datetime | None: ...
    @property
    def candidate_nodes(self) -> list[str] | None: ...
    @property
    def extra(self) -> dict[str, Any] | None: ...
    @property
    def last_error(self) -> str | None: ...
    @property
    def funnel_error(self) -> str | None: ...
    @property
    def name(self) -> str | None: ...
    @property
    def owner(self) -> str | None: ...
    @property
    def resource_class(self) -> str | None: ...
    @property
    def state(self) -> str: ...
    @property
    def traits(self) -> list[str] | None: ...


AllocationRenderer = Callable[[AllocationRecord, "str | None"],
                              dict[str, Any]]


def allocation_renderer(
    base_url: str,
    minor: int,
    fields: Sequence[str] | None = None,
    funnel: bool = False,
) -> AllocationRenderer:
    """:func:`allocation_view` with its arguments but the allocation and
    its node's UUID decided once, for rendering many allocations."""
    names = allocation_fields(minor)
    if fields is not None:
        names = [n for n in names if n in fields or n == "links"]

    def render(allocation: AllocationRecord,
               node_uuid: str | None) -> dict[str, Any]:
        values: dict[str, Any] = {
            "uuid": allocation.uuid,
            "created_at": timestamp(allocation.created_at),
            "updated_at": timestamp(allocation.updated_at),
            "candidate_nodes": list(allocation.candidate_nodes or []),
            "extra": allocation.extra or {},
            "last_error": (allocation.funnel_error or allocation.last_error
                           if funnel else allocation.last_error),
            "name": allocation.name,
            "owner": allocation.owner,
            "resource_class": allocation.resource_class,
            "state": allocation.state,
            "traits": list(allocation.traits or []),
            "links": links(base_url, f"allocations/{allocation.uuid}"),
            "node_uuid": node_uuid,
        }
        return {name: values[name] for name in names}

    return render


def allocation_view(
    allocation: AllocationRecord,
    node_uuid: str | None,
    base_url: str,
    minor: int,
    fields: Sequence[str] | None = None,
    funnel: bool = False,
) -> dict[str, Any]:
    """An allocation as Ironic renders it at ``minor``; with ``funnel``
    (the request opted into the constraints extension) ``last_error``
    carries the selection funnel when one was recorded."""
    return allocation_renderer(base_url, minor, fields, funnel)(
        allocation, node_uuid)
