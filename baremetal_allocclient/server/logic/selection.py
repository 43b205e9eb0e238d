"""Candidate selection decisions: filter order, failure wording, ordering.

The database applies the filters (see ``db/queries.py``); this module says
in which order they are applied, which message names the filter that left
no node, and in which order the survivors are tried.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from baremetal_allocclient.constraints import (
    Constraints,
    Funnel,
    Kind,
    Op,
    Selection,
    Step,
    steps,
)


class Filter(enum.Enum):
    """Filters in the order they narrow the candidate set."""

    RESOURCE_CLASS = "resource_class"  # plus available/maintenance/power
    CANDIDATES = "candidate_nodes"
    OWNER = "owner"
    TRAITS = "traits"


@dataclass(frozen=True)
class Request:
    """What an allocation asks for."""

    resource_class: str
    traits: tuple[str, ...] = ()
    candidate_nodes: tuple[str, ...] = ()
    owner: str | None = None
    name: str | None = None
    #: The constraints extension (empty for plain Ironic requests).
    constraints: Constraints = field(default_factory=Constraints)

    @property
    def preferred_name(self) -> str | None:
        """The node name to try first: the constraint's, else the
        allocation's own name (as Ironic does)."""
        return self.constraints.node_name or self.name

    @property
    def selection(self) -> Selection:
        """The request as the shared funnel sees it."""
        return Selection(self.resource_class, self.traits,
                         self.candidate_nodes, self.owner, self.constraints)


class ConstraintFilter(NamedTuple):
    """A filter of the constraints extension; ``variant`` is what the
    SQL depends on besides bound values (a property's operator)."""

    kind: Kind
    position: int = 0
    variant: str = ""


AnyFilter = Filter | ConstraintFilter


def _property_variant(request: Request, index: int) -> str:
    prop = request.constraints.properties[index]
    if prop.op is Op.MIN:
        return "min"
    return "eq_number" if prop.number is not None else "eq_text"


_CONSTRAINT_KINDS = (Kind.NODE_OWNER, Kind.NODE_LESSEE,
                     Kind.FORBIDDEN_TRAITS, Kind.PROPERTY,
                     Kind.CONDUCTOR_GROUP, Kind.SHARD, Kind.NODE_NAME)


def constraint_filters(request: Request) -> list[ConstraintFilter]:
    """The extension's filters for this request, in funnel order."""
    result = []
    for step in funnel_steps(request):
        if step.kind not in _CONSTRAINT_KINDS:
            continue
        variant = (_property_variant(request, step.index)
                   if step.kind is Kind.PROPERTY else "")
        result.append(ConstraintFilter(step.kind, step.index, variant))
    return result


def funnel_steps(request: Request) -> list[Step]:
    """The shared funnel's steps for this request."""
    return steps(request.selection)


class Candidate(NamedTuple):
    """A node that passed the filters: what ordering and answering need."""

    id: int
    name: str | None
    uuid: str


def active_filters(request: Request) -> list[AnyFilter]:
    """The filters that apply to this request, in order: Ironic's,
    then the constraints extension's."""
    filters: list[AnyFilter] = [Filter.RESOURCE_CLASS]
    if request.candidate_nodes:
        filters.append(Filter.CANDIDATES)
    if request.owner:
        filters.append(Filter.OWNER)
    if request.traits:
        filters.append(Filter.TRAITS)
    filters.extend(constraint_filters(request))
    return filters


def empty_reason(request: Request, emptied_by: AnyFilter) -> str:
    """Why no node matched, naming the filter that removed the last one.

    Ironic's wording is kept for the resource class, candidate and trait
    cases; Ironic has no owner message (it blames the resource class).
    """
    rc = request.resource_class
    if emptied_by is Filter.RESOURCE_CLASS:
        return f"no available nodes match the resource class {rc}"
    if emptied_by is Filter.CANDIDATES:
        return (
            f"none of the requested nodes are available and match the "
            f"resource class {rc}"
        )
    if isinstance(emptied_by, ConstraintFilter):
        return (f"no suitable nodes match the constraint "
                f"{_label(request, emptied_by)}")
    if emptied_by is Filter.OWNER:
        return (
            f"no available nodes matching the resource class {rc} are "
            f"owned by or leased to project {request.owner}"
        )
    return (
        f"no suitable nodes have the requested traits "
        f"{', '.join(request.traits)}"
    )


def _label(request: Request, flt: ConstraintFilter) -> str:
    con = request.constraints
    if flt.kind is Kind.PROPERTY:
        return f"property {con.properties[flt.position].label}"
    if flt.kind is Kind.FORBIDDEN_TRAITS:
        return f"forbidden_traits {', '.join(con.forbidden_traits)}"
    value = {Kind.NODE_OWNER: con.node_owner, Kind.NODE_LESSEE:
             con.node_lessee, Kind.CONDUCTOR_GROUP: con.conductor_group,
             Kind.SHARD: con.shard, Kind.NODE_NAME: con.node_name}
    return f"{flt.kind.value} {value.get(flt.kind)}"


def with_funnel(reason: str, funnel: Funnel) -> str:
    """The reason (Ironic's wording for Ironic's filters), followed by the
    whole funnel in one line."""
    return f"{reason}; funnel: {funnel.one_line()}"


def first_empty(
    request: Request, counts: Sequence[int]
) -> AnyFilter | None:
    """Given cumulative match counts per active filter, the one that emptied.

    ``counts[i]`` is the number of nodes left after applying
    ``active_filters(request)[: i + 1]``.
    """
    for flt, count in zip(active_filters(request), counts, strict=True):
        if count == 0:
            return flt
    return None


def reservation_failure(tried: int) -> str:
    """The error when every candidate was taken by a concurrent request."""
    if tried:
        return f"could not reserve any of {tried} suitable nodes"
    return "all nodes were filtered out during reservation"


def order_candidates(
    candidates: Sequence[Candidate],
    name: str | None,
    rng: random.Random,
) -> list[Candidate]:
    """The order to try nodes in: a node named like the allocation first,
    the rest shuffled so parallel workers rarely collide."""
    order = list(candidates)
    rng.shuffle(order)
    if name is not None:
        named = [c for c in order if c.name == name]
        if named:
            order.remove(named[0])
            order.insert(0, named[0])
    return order


def failure_message(allocation_uuid: str, reason: str) -> str:
    """``last_error`` as Ironic phrases it."""
    return f"Failed to process allocation {allocation_uuid}: {reason}."
