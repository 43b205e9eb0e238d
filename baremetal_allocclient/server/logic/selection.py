"""Candidate selection decisions: filter order, failure wording, ordering.

The database applies the filters (see ``db/queries.py``); this module says
in which order they are applied, which message names the filter that left
no node, and in which order the survivors are tried.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple


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


class Candidate(NamedTuple):
    """A node that passed the filters: what ordering and answering need."""

    id: int
    name: str | None
    uuid: str


def active_filters(request: Request) -> list[Filter]:
    """The filters that apply to this request, in order."""
    filters = [Filter.RESOURCE_CLASS]
    if request.candidate_nodes:
        filters.append(Filter.CANDIDATES)
    if request.owner:
        filters.append(Filter.OWNER)
    if request.traits:
        filters.append(Filter.TRAITS)
    return filters


def empty_reason(request: Request, emptied_by: Filter) -> str:
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
    if emptied_by is Filter.OWNER:
        return (
            f"no available nodes matching the resource class {rc} are "
            f"owned by or leased to project {request.owner}"
        )
    return (
        f"no suitable nodes have the requested traits "
        f"{', '.join(request.traits)}"
    )


def first_empty(
    request: Request, counts: Sequence[int]
) -> Filter | None:
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
