"""Constraints beyond traits, in the SDK: the server's extension when it
advertises one, client-side prefiltering otherwise.

The reference server advertises the constraints extension in ``GET /v1``
(``extensions.constraints``); the SDK then sends the constraints with the
allocation (``X-Baremetal-Alloc-Extensions: constraints``) and asks
``POST /v1/allocation_explain`` for the funnel.  Against Ironic the SDK
lists the nodes of the resource class (one paged query, server-side
filters, ``fields``), applies :mod:`baremetal_allocclient.constraints`
and creates the allocation with the survivors as ``candidate_nodes``
(:func:`constrain` decides, for every create).
A node can change between the listing and Ironic's reservation; Ironic
re-checks the resource class, state, traits and candidates, not the
other constraints.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from baremetal_allocclient import constraints, exceptions
from baremetal_allocclient.v1 import pagination, transport, versions

if TYPE_CHECKING:
    from baremetal_allocclient.v1.protocol import Session
    from baremetal_allocclient.v1.request import AllocationRequest

#: Listing nodes with every field the funnel reads (lessee: 1.65).
NODE_SELECTION = versions.Feature(
    "client-side node selection (node lessee)", (1, 65))
#: Node shards appear in Ironic's API at 1.82.
SHARD_VERSION: versions.Version = (1, 82)
#: ``allocation_uuid`` is not asked for: Ironic answers
#: ``fields=allocation_uuid`` with a 500 (doc/source real-Ironic notes);
#: a node Ironic allocated has ``instance_uuid`` set anyway.
FIELDS = (
    "uuid", "name", "resource_class", "provision_state", "maintenance",
    "power_state", "instance_uuid", "owner", "lessee",
    "traits", "properties", "conductor_group",
)
#: Ironic's largest page; fewer requests for big fleets.
PAGE_SIZE = 1000


@dataclasses.dataclass(frozen=True)
class Plan:
    """What to create after client-side selection."""

    candidates: tuple[str, ...]  # survivor UUIDs, the preferred one first
    preferred: str | None  # UUID of the preferred node, if it survived
    funnel: constraints.Funnel
    #: The name to give the allocation so that Ironic tries the
    #: preferred node first (the node's name), if any.
    preferred_name: str | None = None


def extension_advertised(doc: Any) -> bool:
    """Whether a ``GET /v1`` document advertises the constraints
    extension in a version this SDK speaks (pure)."""
    if not isinstance(doc, Mapping):
        return False
    found = (doc.get("extensions") or {})
    entry = found.get(constraints.EXTENSION) if isinstance(
        found, Mapping) else None
    return isinstance(entry, Mapping) and entry.get("version") == 1


def server_evaluates(session: Session,
                     wanted: constraints.Constraints | None = None) -> bool:
    """Whether the server evaluates constraints (it advertises the
    extension and, for ``wanted``, every feature they use), or this
    client's funnel must: the one decision, for a create
    (:func:`constrain`) and an explain.  A server that lists no features
    understands :data:`constraints.BASE_FEATURES` only."""
    doc = session._v1_document()
    if not extension_advertised(doc):
        return False
    if wanted is None:
        return True
    entry = doc["extensions"][constraints.EXTENSION]
    listed = entry.get("features")
    understood = (frozenset(str(f) for f in listed)
                  if isinstance(listed, list) else constraints.BASE_FEATURES)
    return constraints.features_used(wanted) <= understood


def list_filters(selection: constraints.Selection, narrow: bool
                 ) -> dict[str, Any]:
    """Query of the node listing.  ``narrow`` (creating) lets Ironic drop
    nodes that cannot be allocated; ``explain`` lists every node of the
    resource class, so the first steps are counted too."""
    con = selection.constraints
    fields = list(FIELDS)
    if con.shard is not None:
        fields.append("shard")
    query: dict[str, Any] = {
        "resource_class": selection.resource_class, "fields": fields,
    }
    if narrow:
        query.update(provision_state="available", maintenance="false",
                     associated="false", owner=con.node_owner,
                     lessee=con.node_lessee,
                     conductor_group=con.conductor_group, shard=con.shard)
    return query


def iter_nodes(tp: transport.Transport, query: Mapping[str, Any]
               ) -> Iterator[dict[str, Any]]:
    """Every node of one paged listing (raw JSON documents)."""
    at_least = SHARD_VERSION if "shard" in query["fields"] else None
    marker: str | None = None
    while True:
        response = tp.request(
            "GET", "/v1/nodes", feature=NODE_SELECTION, at_least=at_least,
            params=pagination.build_query(
                query, limit=PAGE_SIZE, marker=marker))
        items, next_link = pagination.items_of(tp.json(response), "nodes")
        yield from (item for item in items if isinstance(item, dict))
        new_marker = pagination.marker_from_next(next_link)
        if not items or new_marker is None or new_marker == marker:
            return
        marker = new_marker


def plan(selection: constraints.Selection,
         nodes: Sequence[Mapping[str, Any]]) -> Plan:
    """Survivors of the funnel, the preferred node first (pure); raise
    :class:`~baremetal_allocclient.exceptions.NoMatchingNodes` when none
    survive."""
    funnel, survivors = constraints.funnel(selection, nodes)
    if not survivors:
        raise no_match(selection, funnel)
    wanted = selection.constraints
    name = wanted.node_name
    best = wanted.order is constraints.Order.BEST_FIT
    if best:
        # Best effort: Ironic tries the node named like the allocation
        # first, the best-fitting one here, then any other survivor.
        survivors = constraints.best_fit(wanted, survivors)
    ordered = constraints.preferred_first(survivors, name)
    first = ordered[0]
    first_name = first.get("name")
    if (name and first_name == name) or (best and first_name):
        return Plan(tuple(str(n["uuid"]) for n in ordered),
                    str(first["uuid"]), funnel, str(first_name))
    return Plan(tuple(str(n["uuid"]) for n in ordered), None, funnel)


def no_match(selection: constraints.Selection, funnel: constraints.Funnel
             ) -> exceptions.NoMatchingNodes:
    """The error for an empty funnel (nothing was created)."""
    return exceptions.NoMatchingNodes(
        f"No allocation created: "
        f"{constraints.empty_reason(selection, funnel)}",
        explain_document(selection, funnel))


def explain_document(selection: constraints.Selection,
                     funnel: constraints.Funnel,
                     survivors: Sequence[Mapping[str, Any]] = ()
                     ) -> dict[str, Any]:
    """The explain answer, the same shape as the reference server's;
    ``order`` from ``survivors`` (Ironic's own choice is first fit)."""
    wanted = selection.constraints
    order = wanted.order or constraints.Order.FIRST_FIT
    terms = constraints.fit_terms(wanted)
    ranked = [(str(n.get("name") or n.get("uuid")),
               constraints.excess(terms, n.get("properties")))
              for n in constraints.best_fit(wanted, survivors)] \
        if order is constraints.Order.BEST_FIT else []
    return {"resource_class": selection.resource_class, **funnel.as_dict(),
            "order": constraints.order_document(order, wanted, ranked)}


def funnel_from_document(selection: constraints.Selection,
                         doc: Any) -> dict[str, Any]:
    """Check the reference server's explain answer."""
    if not isinstance(doc, Mapping) or not isinstance(
            doc.get("funnel"), list):
        raise exceptions.InvalidResponse(
            "unexpected explain document from the server")
    return {"resource_class": selection.resource_class,
            "funnel": list(doc["funnel"]),
            "candidates": doc.get("candidates"),
            "first_empty": doc.get("first_empty"),
            "order": doc.get("order")}


def prefilter(tp: transport.Transport,
              selection: constraints.Selection) -> Plan:
    """Client-side selection: one narrow paged listing; only when
    nothing survives, a second listing of the whole resource class
    to say why."""
    narrow = list(iter_nodes(tp, list_filters(selection, True)))
    try:
        return plan(selection, narrow)
    except exceptions.NoMatchingNodes:
        broad = list(iter_nodes(tp, list_filters(selection, False)))
        return plan(selection, broad)


def constrain(session: Session, request: AllocationRequest
              ) -> tuple[AllocationRequest, list[str]]:
    """The constraints step of a create: the request to send and the
    extensions it opts into.  On a server that advertises the
    constraints extension the request goes as it is (its body carries
    the constraints); elsewhere the nodes are selected here
    (:func:`prefilter`) and the request goes without constraints, the
    survivors as its candidate nodes, named like the preferred node
    when it has no name of its own (Ironic tries that node first)."""
    if not request.constraints:
        return request, []
    if request.node is not None:
        raise exceptions.InvalidArgument(
            "constraints do not apply to a backfill (node)")
    if server_evaluates(session, request.constraints):
        return request, [constraints.EXTENSION]
    plan = prefilter(session._transport, request.selection())
    # With require_node_name the plan holds that one node only.
    name = request.name
    if plan.preferred and name is None:
        name = plan.preferred_name
    return dataclasses.replace(request, candidate_nodes=plan.candidates,
                               name=name, constraints=None), []
