"""The fleet's figures, as the database has them now: nodes per
resource class by state, allocations by state, and the waiting line
per resource class (depth, and when its oldest entry arrived).  One
read transaction, three grouped queries; what the metrics export
(``server/metrics/fleet.py``), whichever process is asked.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from sqlalchemy import case, func, select

from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server.allocation.states import ALLOCATING
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Allocation, Node

#: What a node is, for the figures (first match): in maintenance, held
#: by an allocation, available to allocate, or anything else.
NODE_STATES = ("maintenance", "allocated", "available", "other")

_NODE_STATE = case(
    (Node.maintenance.is_(True), "maintenance"),
    (Node.allocation_id.is_not(None), "allocated"),
    (Node.provision_state == ns.AVAILABLE, "available"),
    else_="other",
)


@dataclass(frozen=True)
class Figures:
    """The fleet at ``read_at``."""

    read_at: datetime.datetime
    #: (resource class or None, node state) -> nodes
    nodes: dict[tuple[str | None, str], int]
    #: allocation state -> allocations
    allocations: dict[str, int]
    #: resource class or None -> (allocations waiting, oldest created_at)
    line: dict[str | None, tuple[int, datetime.datetime]]


def figures(db: Database, now: datetime.datetime) -> Figures:
    """The fleet's figures, read in one transaction."""
    with db.read() as session:
        nodes = session.execute(
            select(Node.resource_class, _NODE_STATE, func.count())
            .group_by(Node.resource_class, _NODE_STATE)).all()
        allocations = session.execute(
            select(Allocation.state, func.count())
            .group_by(Allocation.state)).all()
        line = session.execute(
            select(Allocation.resource_class, func.count(),
                   func.min(Allocation.created_at))
            .where(Allocation.state == ALLOCATING,
                   Allocation.queue_deadline.is_not(None))
            .group_by(Allocation.resource_class)).all()
    return Figures(
        now,
        {(rc, str(state)): int(count) for rc, state, count in nodes},
        {str(state): int(count) for state, count in allocations},
        {rc: (int(count), oldest) for rc, count, oldest in line},
    )
