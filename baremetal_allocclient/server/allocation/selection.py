"""Candidate selection decisions: filters, failure texts, ordering.

The database applies the filters (see ``allocation/matching.py``) in the
order of the one funnel (:data:`baremetal_allocclient.constraints.FUNNEL`),
which also words the failures; this module groups the funnel's steps into SQL
filters, builds the two texts of a failure (Ironic's, and the one with
the funnel for clients that opted in) and orders the survivors.
"""

from __future__ import annotations

import enum
import functools
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from baremetal_allocclient import constraints
from baremetal_allocclient.constraints import (
    Constraints,
    Funnel,
    Kind,
    Selection,
    Step,
    steps,
)


class Filter(enum.Enum):
    """SQL filters for Ironic's steps of the funnel."""

    #: The funnel's resource class, available, not in maintenance, power
    #: state and unreserved steps in one filter (the selection index).
    RESOURCE_CLASS = "resource_class"
    OWNER = "owner"
    CANDIDATES = "candidate_nodes"
    TRAITS = "traits"


#: The funnel's steps that :attr:`Filter.RESOURCE_CLASS` applies.
BASIC_KINDS = (Kind.RESOURCE_CLASS, Kind.AVAILABLE, Kind.NOT_IN_MAINTENANCE,
               Kind.POWER_STATE, Kind.UNRESERVED)
_IRONIC_FILTERS = {Kind.OWNER: Filter.OWNER, Kind.CANDIDATES:
                   Filter.CANDIDATES, Kind.TRAITS: Filter.TRAITS}


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


def _property_variant(wanted: Constraints, index: int) -> str:
    return property_variant(wanted.properties[index])


def _any_of_variant(wanted: Constraints) -> str:
    """``min,eq_text|exists``: the variants of every alternative's
    terms (the SQL of ``any_of`` depends on them)."""
    return "|".join(",".join(property_variant(p) for p in terms)
                    for terms in wanted.any_of)


def property_variant(prop: constraints.PropertyConstraint) -> str:
    """What one property constraint's SQL depends on besides bound
    values: its operator, and whether its value (set) holds a number."""
    if prop.op in constraints.NUMERIC_OPS or prop.op in constraints.KEY_OPS:
        return prop.op.value
    if prop.op in constraints.SET_OPS:
        numeric = any(constraints.as_number(v) is not None
                      for v in prop.values)
        return f"{prop.op.value}_{'number' if numeric else 'text'}"
    return "eq_number" if prop.number is not None else "eq_text"


def constraint_filters(request: Request) -> list[ConstraintFilter]:
    """The extension's filters for this request, in funnel order."""
    return [f for f in active_filters(request)
            if isinstance(f, ConstraintFilter)]


def funnel_steps(request: Request) -> list[Step]:
    """The shared funnel's steps for this request."""
    return steps(request.selection)


class Candidate(NamedTuple):
    """A node that passed the filters: what ordering and answering need."""

    id: int
    name: str | None
    uuid: str


#: A candidate as the database returns it: (id, name, uuid).
CandidateRow = tuple[int, str | None, str]


def active_filters(request: Request) -> list[AnyFilter]:
    """The filters that apply to this request, in funnel order."""
    return list(_filters_of(request.selection))


@functools.lru_cache(maxsize=1024)
def _filters_of(wanted: Selection) -> tuple[AnyFilter, ...]:
    """:func:`active_filters`, worked out once for each selection (a
    create's is usually one seen before: a class, some traits)."""
    filters: list[AnyFilter] = []
    for step in steps(wanted):
        if step.kind in BASIC_KINDS:
            if Filter.RESOURCE_CLASS not in filters:
                filters.append(Filter.RESOURCE_CLASS)
        elif step.kind in _IRONIC_FILTERS:
            filters.append(_IRONIC_FILTERS[step.kind])
        else:
            variant = (_property_variant(wanted.constraints, step.index)
                       if step.kind is Kind.PROPERTY else
                       _any_of_variant(wanted.constraints)
                       if step.kind is Kind.ANY_OF else "")
            filters.append(ConstraintFilter(step.kind, step.index, variant))
    return tuple(filters)


class Why(NamedTuple):
    """A failure's two texts: Ironic's (what every client reads) and,
    when there is a funnel, the same followed by it (what clients that
    opted into the extension read)."""

    ironic: str
    extended: str | None = None
    #: What emptied the set, for the figures: a funnel step's kind,
    #: ``taken`` (nodes passed every step, others took them) or what
    #: the backend names (``queue_deadline``, ``placement``...).
    step: str = "other"


def explain_failure(request: Request, funnel: Funnel, tried: int) -> Why:
    """Why no node was reserved, given the funnel counted now: the step
    that left none in the funnel's wording or, when nodes pass every
    step (concurrent requests took them), Ironic's reservation
    failure."""
    emptied = constraints.empty_step(request.selection, funnel)
    if emptied is None:
        reason = reservation_failure(tried)
    else:
        reason = constraints.reason(request.selection, emptied)
    return Why(reason, constraints.with_funnel(reason, funnel),
               "taken" if emptied is None else emptied.kind.value)


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


def candidate_order(
    candidates: Sequence[CandidateRow],
    name: str | None,
    draw: Callable[[int], int],
) -> Iterator[Candidate]:
    """:func:`order_candidates` one node at a time: a node named like the
    allocation first, then the rest in random order, each picked by
    ``draw(n)`` (a random index below ``n``) only when it is asked for,
    so an attempt that wins on its first node draws once, not once per
    candidate (and makes one :class:`Candidate`, not one per row)."""
    rest = list(candidates)
    if name is not None:
        for index, (_id, candidate_name, _uuid) in enumerate(rest):
            if candidate_name == name:
                yield Candidate._make(rest.pop(index))
                break
    while rest:
        index = draw(len(rest))
        rest[index], rest[-1] = rest[-1], rest[index]
        yield Candidate._make(rest.pop())


def failure_message(allocation_uuid: str, reason: str) -> str:
    """``last_error`` as Ironic phrases it."""
    return f"Failed to process allocation {allocation_uuid}: {reason}."
