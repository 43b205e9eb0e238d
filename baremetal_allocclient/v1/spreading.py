"""A group spread over failure domains, decided on the client (servers
without the groups extension: real Ironic, or the reference server on
Placement).

Best effort, and said so: the nodes are listed once (one paged query,
as the constraints' client-side prefilter does), the members' nodes
chosen by :func:`baremetal_allocclient.spread.choose`, and each member
created with its one node as ``candidate_nodes``.  Another client may
take a chosen node before its member is made; that member then fails
and the whole group is deleted (the usual roll-back), never placed
elsewhere against the spread.  The reference server with the groups
extension decides the same in the group's one transaction instead.
"""

from __future__ import annotations

import dataclasses
import logging
import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from baremetal_allocclient import constraints, exceptions
from baremetal_allocclient.spread import Placement, Spread, choose
from baremetal_allocclient.v1 import selecting

if TYPE_CHECKING:
    from baremetal_allocclient.v1 import transport
    from baremetal_allocclient.v1.request import AllocationRequest

LOG = logging.getLogger(__name__)

#: Said in the log and the docs: the client cannot make it atomic.
BEST_EFFORT = ("spread decided on the client (best effort: this server "
               "cannot reserve a group in one transaction)")


def _query(selection: constraints.Selection, spread: Spread, narrow: bool
           ) -> dict[str, Any]:
    query = selecting.list_filters(selection, narrow)
    if spread.over == "shard" and "shard" not in query["fields"]:
        query["fields"] = [*query["fields"], "shard"]
    return query


def place(nodes: Sequence[Mapping[str, Any]],
          selection: constraints.Selection, spread: Spread, count: int,
          rng: random.Random,
          known: Sequence[str | None] = ()) -> Placement[Mapping[str, Any]]:
    """The members' nodes among ``nodes`` (pure but for ``rng``): those
    passing the funnel, in best-fit order or shuffled."""
    _funnel, survivors = constraints.funnel(selection, nodes)
    if selection.constraints.order is constraints.Order.BEST_FIT:
        survivors = constraints.best_fit(selection.constraints, survivors)
    else:
        rng.shuffle(survivors)
    return choose(spread, count, survivors, spread.domain_of, known)


def member_nodes(tp: transport.Transport, request: AllocationRequest,
                 spread: Spread, count: int,
                 rng: random.Random | None = None) -> list[str]:
    """The UUIDs of the members' nodes, one per member in order;
    :class:`~baremetal_allocclient.exceptions.GroupFailed` (nothing
    created) when the free nodes cannot satisfy the spread."""
    LOG.info("Group of %d: %s", count, BEST_EFFORT)
    selection = request.selection()
    nodes = list(selecting.iter_nodes(tp, _query(selection, spread, True)))
    placement = place(nodes, selection, spread, count,
                      rng or random.Random())  # noqa: S311 (not a secret)
    if placement.placed:
        return [str(node["uuid"]) for node in placement.chosen]
    every = selecting.iter_nodes(tp, _query(selection, spread, False))
    known = sorted({d for d in map(spread.domain_of, every)
                    if d is not None})
    placement = place(nodes, selection, spread, count,
                      random.Random(0), known)  # noqa: S311
    raise exceptions.GroupFailed(
        f"Group of {count} not reserved (nothing was created; "
        f"{BEST_EFFORT}): {placement.reason()}", rolled_back=False)


def member_request(request: AllocationRequest, node_uuid: str
                   ) -> AllocationRequest:
    """One member's request: its chosen node as the only candidate, the
    constraints already applied here."""
    return dataclasses.replace(request, candidate_nodes=(node_uuid,),
                               constraints=None)
