"""An allocation's columns as plain attributes, outside any ORM session.

What a create builds, stores (``reservation.insert_allocation``), hands
to the workers and answers.  Making an ORM ``Allocation`` and reading it
back through its instrumented attributes cost a create about as much as
the ``INSERT`` itself; nothing on that path needs a session.  The fields
are the ``allocations`` table's columns (a test checks it).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from baremetal_allocclient.server.db.models import Allocation


@dataclass(slots=True)
class AllocationRow:
    """One allocation's values; ``id`` is 0 until it is inserted."""

    uuid: str
    state: str
    created_at: datetime.datetime
    resource_class: str | None = None
    name: str | None = None
    traits: list[str] = field(default_factory=list)
    candidate_nodes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    owner: str | None = None
    #: The constraints extension's document (``constraints.to_wire``).
    constraints: dict[str, Any] | None = None
    conductor_affinity: str | None = None
    queue_deadline: datetime.datetime | None = None
    group_name: str | None = None
    group_size: int | None = None
    lease_expires_at: datetime.datetime | None = None
    lease_duration: str | None = None
    node_id: int | None = None
    last_error: str | None = None
    funnel_error: str | None = None
    updated_at: datetime.datetime | None = None
    id: int = 0


#: An allocation read from a session, or one built here.
AnyAllocation: TypeAlias = Allocation | AllocationRow
