"""Reserving a whole group of allocations in one transaction
(:mod:`~baremetal_allocclient.server.allocation.group_reservation`): all
members ``active`` or nothing stored.  :func:`reserve` opens its own
transactions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from baremetal_allocclient.constraints import Constraints, Order
from baremetal_allocclient.server.allocation import (
    group_reservation as group_db,
)
from baremetal_allocclient.server.allocation.release.refusals import Holder
from baremetal_allocclient.server.allocation.selection import Request
from baremetal_allocclient.server.allocation.service import creating
from baremetal_allocclient.server.allocation.states import ACTIVE
from baremetal_allocclient.server.db import lookups, node_lookup
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Allocation
from baremetal_allocclient.server.domain import policy
from baremetal_allocclient.server.domain.errors import Conflict
from baremetal_allocclient.server.domain.principal import Principal
from baremetal_allocclient.server.domain.recording import (
    NOT_RECORDED,
    Change,
    Recorder,
)
from baremetal_allocclient.spread import Spread


@dataclass(frozen=True)
class Group:
    """A validated group request: one member per UUID and name."""

    uuids: list[str]
    names: list[str | None]
    resource_class: str
    traits: list[str]
    candidate_nodes: list[str]  # as given (UUIDs or names)
    extra: dict[str, Any]
    owner: str | None  # as requested (the service decides)
    constraints: Constraints
    #: The extensions' columns of every member (``allocation/marks.py``):
    #: the group's name and size, a lease.
    marks: dict[str, Any] = field(default_factory=dict)
    #: Spread the members over failure domains (None: anywhere).
    spread: Spread | None = None


@dataclass(frozen=True)
class Reserved:
    """The members made, with their node UUIDs, and with a spread the
    members and free nodes per domain."""

    members: list[tuple[Allocation, str]]
    placement: dict[str, Any] | None = None


def _check_unique(uuids: Sequence[str], names: Sequence[str | None]
                  ) -> Any:
    """Clear 409s before the inserts (the unique indexes back them)."""
    def check(session: Session) -> None:
        for uuid in uuids:
            if lookups.allocation_by_ident(session, uuid, by_uuid=True,
                                           lock=False):
                raise Conflict(
                    f"An allocation with UUID {uuid} already exists.")
        for name in names:
            if name is not None and lookups.allocation_by_ident(
                    session, name, by_uuid=False, lock=False):
                raise Conflict(
                    f"An allocation with name {name} already exists.")
    return check


def reserve(db: Database, affinity: str, group: Group, who: Principal,
            recorder: Recorder = NOT_RECORDED, holder: Holder | None = None,
            default_order: Order = Order.FIRST_FIT) -> Reserved:
    """Every member ``active`` on its own node, with the node's UUID
    (their owner as ``who`` may set it), spread as the group asks;
    :class:`Conflict` saying why when the group cannot be reserved
    (nothing stored).  Nodes are tried in the group's order, else
    ``default_order``."""
    wanted = group.constraints
    owner = policy.create_owner(who, group.owner)
    candidates = creating.candidates_in_read(db, who, group.candidate_nodes)
    traits = group.traits
    request = Request(
        resource_class=group.resource_class, traits=tuple(traits),
        candidate_nodes=tuple(candidates), owner=owner,
        constraints=wanted)

    def build() -> list[Allocation]:
        return [Allocation(
            uuid=uuid, name=name, state=ACTIVE,
            resource_class=request.resource_class, traits=traits,
            candidate_nodes=candidates, extra=group.extra,
            owner=request.owner,
            constraints=wanted.to_wire() if wanted else None,
            conductor_affinity=affinity, **group.marks,
        ) for uuid, name in zip(group.uuids, group.names, strict=True)]

    count = len(group.uuids)
    try:
        outcome = group_db.reserve_group(
            db, count, build, request, node_lookup.node_filter(who),
            check=_check_unique(group.uuids, group.names), holder=holder,
            spread=group.spread, order=wanted.order or default_order)
    except IntegrityError:
        raise Conflict("An allocation of the group has a name or UUID "
                       "already in use.") from None
    if outcome.reason is not None:
        raise Conflict(f"Group of {count} not reserved (nothing was "
                       f"created): {outcome.reason}")
    for member, node_uuid in outcome.members:
        recorder.changed(Change(member.uuid, owner, None, ACTIVE, node_uuid,
                                "request"))
    return Reserved(list(outcome.members), outcome.placement)
