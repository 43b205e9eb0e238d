"""Which nodes match an allocation request, in SQL: the funnel's filters
as conditions, the candidate window, the funnel counts.

Every function takes the caller's session or connection (first
argument) and opens no transaction.  Statements are built once per
combination of filters, with the request's values as bound parameters
(``filter_params``): building and cache-keying an SQLAlchemy expression
costs more CPU than running it on an index, and these run several times
per allocation.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Double,
    Integer,
    Select,
    and_,
    bindparam,
    case,
    exists,
    false,
    func,
    or_,
    select,
    type_coerce,
)
from sqlalchemy.orm import Session
from sqlalchemy.types import NullType

from baremetal_allocclient import constraints as constraints_module
from baremetal_allocclient.constraints import (
    Constraints,
    Funnel,
    Kind,
    Step,
    funnel_from_counts,
)
from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server.allocation.selection import (
    AnyFilter,
    CandidateRow,
    ConstraintFilter,
    Filter,
    Request,
    constraint_filters,
    funnel_steps,
)
from baremetal_allocclient.server.db import node_properties  # noqa: F401
from baremetal_allocclient.server.db.allocation_row import AnyAllocation
from baremetal_allocclient.server.db.driver_statements import (
    AnyConnection,
    driver_statement,
)
from baremetal_allocclient.server.db.models import (
    Node,
    NodeProperty,
    NodeTrait,
)
from baremetal_allocclient.server.db.planner_hints import (
    index_order,
    unindexed,
)

# Statements are built once per combination of filters, with the request's
# values as bound parameters (``filter_params``): building and cache-keying
# an SQLAlchemy expression costs more CPU than running it on an index, and
# these run several times per allocation.

def filter_params(request: Request) -> dict[str, Any]:
    """Values for the bound parameters of :func:`predicates`."""
    wanted = sorted(set(request.traits))
    return {
        "f_resource_class": request.resource_class,
        "f_candidate_nodes": list(request.candidate_nodes),
        "f_owner": request.owner,
        "f_traits": wanted,
        "f_trait_count": len(wanted),
        **_constraint_params(request),
    }


def _constraint_params(request: Request) -> dict[str, Any]:
    """Bound values of the constraints extension's filters."""
    con = request.constraints
    if not con:
        return {}
    params: dict[str, Any] = {
        "c_forbidden": list(con.forbidden_traits),
        "c_any_traits": list(con.any_traits),
        "c_node_owner": con.node_owner,
        "c_node_lessee": con.node_lessee,
        "c_group": con.conductor_group,
        "c_shard": con.shard,
        "c_node_name": con.node_name,
    }
    for i, prop in enumerate(con.properties):
        params.update(_property_params(f"c_p{i}", prop))
    for j, terms in enumerate(con.any_of):
        for k, prop in enumerate(terms):
            params.update(_property_params(f"c_a{j}_{k}", prop))
    return params


def _property_params(prefix: str, prop: constraints_module.
                     PropertyConstraint) -> dict[str, Any]:
    return {
        f"{prefix}_key": prop.key, f"{prefix}_text": prop.value,
        f"{prefix}_number": prop.number,
        f"{prefix}_texts": list(prop.values),
        f"{prefix}_numbers": [
            n for n in map(constraints_module.as_number, prop.values)
            if n is not None],
    }


def _property_predicate(flt: ConstraintFilter) -> ColumnElement[bool]:
    return _property_condition(f"c_p{flt.position}", flt.variant)


def _any_of_predicate(flt: ConstraintFilter) -> ColumnElement[bool]:
    """Every term of at least one alternative (``flt.variant``: each
    alternative's term variants, see ``selection._any_of_variant``)."""
    return or_(*(
        and_(*(_property_condition(f"c_a{j}_{k}", variant)
               for k, variant in enumerate(terms.split(","))))
        for j, terms in enumerate(flt.variant.split("|"))))


def _property_condition(prefix: str, variant_: str
                        ) -> ColumnElement[bool]:
    """EXISTS a normalized property row of the node satisfying it (the
    primary key (node_id, key) makes it one index lookup per node); NOT
    EXISTS for ``not_in`` and ``not_exists``, which a node without the
    key passes.  Bound values named ``prefix_...``."""
    row = NodeProperty
    # (variants: min, max, eq_number, eq_text, [not_]in_number,
    # [not_]in_text, [not_]exists -- see selection.property_variant)
    negated = variant_.startswith("not_")
    variant, _, kind = variant_.removeprefix("not_").partition("_")
    test = _property_test(prefix, variant, kind)
    found = exists().where(row.node_id == Node.id,
                           row.key == bindparam(f"{prefix}_key"), *test)
    return ~found if negated else found


def _property_test(prefix: str, variant: str, kind: str
                   ) -> list[ColumnElement[bool]]:
    """The condition on the row of one property constraint (none for
    ``exists``): ``variant`` is the operator (``in`` for ``not_in``
    too), ``kind`` whether the value (or set) holds a number."""
    row = NodeProperty
    number: BindParameter[float] = bindparam(f"{prefix}_number")
    if variant == "min":
        return [row.number >= number]
    if variant == "max":
        return [row.number <= number]
    if variant == "eq":
        if kind == "number":
            return [or_(row.number == number,
                        and_(row.number.is_(None),
                             row.text == bindparam(f"{prefix}_text")))]
        return [row.text == bindparam(f"{prefix}_text")]
    if variant == "in":
        texts = row.text.in_(bindparam(f"{prefix}_texts", expanding=True))
        if kind == "number":
            numbers: BindParameter[list[float]] = bindparam(
                f"{prefix}_numbers", expanding=True)
            return [or_(row.number.in_(numbers),
                        and_(row.number.is_(None), texts))]
        return [texts]
    return []  # exists, not_exists: the row itself


def _constraint_predicate(flt: ConstraintFilter) -> ColumnElement[bool]:
    kind = flt.kind
    if kind is Kind.PROPERTY:
        return _property_predicate(flt)
    if kind is Kind.ANY_OF:
        return _any_of_predicate(flt)
    if kind is Kind.FORBIDDEN_TRAITS:
        return ~exists().where(
            NodeTrait.node_id == Node.id,
            NodeTrait.trait.in_(bindparam("c_forbidden", expanding=True)))
    if kind is Kind.ANY_TRAITS:
        return exists().where(
            NodeTrait.node_id == Node.id,
            NodeTrait.trait.in_(bindparam("c_any_traits", expanding=True)))
    column, param = {
        Kind.NODE_OWNER: (Node.owner, "c_node_owner"),
        Kind.NODE_LESSEE: (Node.lessee, "c_node_lessee"),
        Kind.CONDUCTOR_GROUP: (Node.conductor_group, "c_group"),
        Kind.SHARD: (Node.shard, "c_shard"),
        Kind.NODE_NAME: (Node.name, "c_node_name"),
    }[kind]
    return column == bindparam(param)


def _predicate(flt: AnyFilter) -> list[ColumnElement[bool]]:
    if isinstance(flt, ConstraintFilter):
        return [_constraint_predicate(flt)]
    if flt is Filter.RESOURCE_CLASS:
        return [
            Node.provision_state == ns.AVAILABLE,
            Node.maintenance.is_(False),
            Node.power_state.is_not(None),
            Node.instance_uuid.is_(None),
            Node.allocation_id.is_(None),
            Node.parent_node.is_(None),  # child nodes are never allocated
            Node.resource_class == bindparam("f_resource_class"),
        ]
    if flt is Filter.CANDIDATES:
        return [Node.uuid.in_(bindparam("f_candidate_nodes", expanding=True))]
    if flt is Filter.OWNER:
        owner: BindParameter[str] = bindparam("f_owner")
        return [or_(Node.owner == owner, Node.lessee == owner)]
    # Counted for the node at hand, one probe of node_traits' primary key
    # per trait: an uncorrelated ``Node.id IN (SELECT node_id ... GROUP
    # BY node_id HAVING count = n)`` was worked out whole by every
    # statement, the traits of every node that had one of them read to
    # look at 32 nodes or take one (``test_window_reads``).  A trait few
    # free nodes have makes a window walk more of its class's free nodes
    # instead ("A trait looked up for the node at hand" in
    # doc/source/internals/benchmarks.rst).
    has_all = (
        select(func.count())
        .where(NodeTrait.node_id == Node.id,
               NodeTrait.trait.in_(bindparam("f_traits", expanding=True)))
        .scalar_subquery()
    )
    return [has_all == bindparam("f_trait_count")]


@functools.cache
def predicates(
    filters: tuple[AnyFilter, ...]
) -> tuple[ColumnElement[bool], ...]:
    """SQL conditions for the given filters (parameters:
    :func:`filter_params`)."""
    result: list[ColumnElement[bool]] = []
    for flt in filters:
        result.extend(_predicate(flt))
    return tuple(result)


def candidates(
    session: Session, request: Request, filters: Sequence[AnyFilter]
) -> list[tuple[int, str | None]]:
    """(id, name) of every node passing all filters; nothing else loaded."""
    query = select(Node.id, Node.name).where(*predicates(tuple(filters)))
    rows = session.connection().execute(query, filter_params(request))
    return [(int(row[0]), row[1]) for row in rows]


#: How many candidates one search loads.  Loading every matching node
#: made each allocation cost O(fleet size); a window of the index, at a
#: random position, costs the same at 1k and 100k nodes and still spreads
#: concurrent workers over different nodes.
CANDIDATE_WINDOW = 32


#: The selection index's columns before the id, which a window's filters
#: fix (``_window_predicates``).
_SELECTION_FIXED = (Node.resource_class, Node.provision_state,
                    Node.maintenance)


@functools.cache
def candidate_query(
    filters: tuple[AnyFilter, ...], before: bool = False
) -> Select[Any]:
    """Up to ``w_limit`` matching nodes from id ``w_pivot`` on (or, with
    ``before``, from the start up to ``w_pivot``), in id order: a range
    of the selection index (resource class, state, maintenance, id),
    whose first three columns the filters fix.

    Otherwise a database may walk the primary key from the pivot past
    every deployed node, or read every free node of the class and sort
    them (:mod:`~baremetal_allocclient.server.db.planner_hints`).  With
    ``candidate_nodes`` the nodes are read by UUID and the few found
    sorted, instead: SQLite would walk the class's free nodes along the
    selection index until it met them.
    """
    pivot: BindParameter[int] = bindparam("w_pivot")
    position = Node.id < pivot if before else Node.id >= pivot
    by_class = Filter.CANDIDATES not in filters
    # (Select[Any]: SQLAlchemy 2.0 and 2.1 write a row's types apart.)
    return cast("Select[Any]", (
        select(Node.id, Node.name, Node.uuid)
        .where(*_window_predicates(filters, by_class), position)
        .order_by(index_order(_SELECTION_FIXED, Node.id))
        .limit(bindparam("w_limit", type_=Integer))
    ))


def _window_predicates(
    filters: tuple[AnyFilter, ...], by_class: bool = True
) -> list[ColumnElement[bool]]:
    """``predicates`` with the "is free" tests written so that no SQLite
    index can serve them (:func:`unindexed`).

    Without statistics SQLite takes ``allocation_id IS NULL`` on a unique
    index for a one-row lookup and walks every free node in the fleet;
    this way the selection index (resource class, state, maintenance,
    id) yields the window directly, as it does on the other databases.
    Not ``by_class``: the resource class is written unindexed too, so
    that SQLite looks the nodes up by UUID (``candidate_nodes``).
    """
    result: list[ColumnElement[bool]] = []
    resource_class = (Node.resource_class if by_class
                      else unindexed(Node.resource_class))
    for flt in filters:
        if flt is not Filter.RESOURCE_CLASS:
            result.extend(_predicate(flt))
            continue
        result += [
            resource_class == bindparam("f_resource_class"),
            Node.provision_state == ns.AVAILABLE,
            # An equality (the column is NOT NULL), which MariaDB can
            # use as the index's third column; ``IS FALSE`` it cannot.
            Node.maintenance == false(),
            Node.power_state.is_not(None),
            unindexed(Node.instance_uuid).is_(None),
            unindexed(Node.allocation_id).is_(None),
            Node.parent_node.is_(None),
        ]
    return result


@functools.cache
def _named_candidate_query(
    filters: tuple[AnyFilter, ...]
) -> Select[Any]:
    return cast("Select[Any]", select(Node.id, Node.name, Node.uuid).where(
        *predicates(filters), Node.name == bindparam("w_name")
    ))


_HIGHEST_NODE_ID = select(func.max(Node.id))


def highest_node_id(session: Session | AnyConnection) -> int:
    """The largest node id (0 without nodes); an index lookup."""
    conn = (session.connection() if isinstance(session, Session)
            else session)
    row = driver_statement(_HIGHEST_NODE_ID, conn.dialect).first(conn, {})
    return int(row[0] or 0)


def candidate_window(
    session: Session | AnyConnection,
    request: Request,
    filters: Sequence[AnyFilter],
    pivot: int,
    limit: int = CANDIDATE_WINDOW,
) -> list[CandidateRow]:
    """Up to ``limit`` nodes passing all filters, starting at id ``pivot``
    and wrapping around; a node named like the allocation is always
    included when it matches.  Empty only when no node matches.  The
    rows as the driver returns them (:func:`selection.candidate_order`
    makes a ``Candidate`` of those it tries)."""
    key = tuple(filters)
    conn = (session.connection() if isinstance(session, Session)
            else session)
    params = filter_params(request)
    rows = driver_statement(candidate_query(key), conn.dialect).rows(
        conn, {**params, "w_pivot": pivot, "w_limit": limit})
    if len(rows) < limit:
        rows += driver_statement(candidate_query(key, True), conn.dialect
                                 ).rows(conn, {**params, "w_pivot": pivot,
                                               "w_limit": limit - len(rows)})
    # (id, name, uuid) as the drivers return them: int, str or None, str
    found: list[CandidateRow] = rows
    preferred = request.preferred_name
    if preferred is not None and all(row[1] != preferred for row in found):
        named = driver_statement(_named_candidate_query(key), conn.dialect
                                 ).first(conn, {**params, "w_name": preferred})
        if named is not None:
            found.append((int(named[0]), named[1], str(named[2])))
    return found


# -- best fit ----------------------------------------------------------


def fit_params(request: Request) -> dict[str, Any]:
    """Bound values of :func:`best_fit_query`'s score."""
    params: dict[str, Any] = {}
    terms = constraints_module.fit_terms(request.constraints)
    for i, (key, floor) in enumerate(terms):
        params[f"o_{i}_key"] = key
        params[f"o_{i}_floor"] = floor
        params[f"o_{i}_scale"] = constraints_module.fit_scale(floor)
    return params


def _excess(terms: int) -> ColumnElement[Any]:
    """:func:`constraints.excess` in SQL: per term, the node's number (a
    missing or non-numeric value counting as the floor) over the
    floor, divided by the scale."""
    parts: list[ColumnElement[Any]] = []
    for i in range(terms):
        floor: BindParameter[float] = bindparam(f"o_{i}_floor",
                                                type_=Double)
        value = (select(NodeProperty.number)
                 .where(NodeProperty.node_id == Node.id,
                        NodeProperty.key == bindparam(f"o_{i}_key"))
                 .scalar_subquery())
        parts.append((func.coalesce(value, floor) - floor)
                     / bindparam(f"o_{i}_scale", type_=Double))
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    # No result type: a Float's conversion needs the column's type code,
    # which a DriverStatement does not have (float() takes the value).
    return type_coerce(total, NullType())


@functools.cache
def best_fit_query(filters: tuple[AnyFilter, ...], terms: int,
                   lock: bool = False) -> Select[Any]:
    """Up to ``w_limit`` nodes passing every filter, least excess first,
    ties by UUID, with the excess (parameters: :func:`filter_params`,
    :func:`fit_params`).  Every matching node is scored: best fit costs
    a scan of the matching nodes, not an index window.  ``lock``: FOR
    UPDATE SKIP LOCKED (a group's reservation)."""
    score = _excess(terms)
    query = (select(Node.id, Node.name, Node.uuid, score)
             .where(*predicates(filters))
             .order_by(score, Node.uuid)
             .limit(bindparam("w_limit", type_=Integer)))
    if lock:
        query = query.with_for_update(skip_locked=True)
    return cast("Select[Any]", query)


def best_fit_rows(conn: Session | AnyConnection, request: Request,
                  filters: Sequence[AnyFilter], limit: int
                  ) -> list[tuple[int, str | None, str, float]]:
    """(id, name, uuid, excess) of the ``limit`` best-fitting nodes."""
    if isinstance(conn, Session):
        conn = conn.connection()
    terms = len(constraints_module.fit_terms(request.constraints))
    statement = driver_statement(best_fit_query(tuple(filters), terms),
                                 conn.dialect)
    rows = statement.rows(conn, {**filter_params(request),
                                 **fit_params(request), "w_limit": limit})
    return [(int(r[0]), r[1], str(r[2]), float(r[3])) for r in rows]


def best_fit_window(
    conn: Session | AnyConnection,
    request: Request,
    filters: Sequence[AnyFilter],
    limit: int = CANDIDATE_WINDOW,
) -> list[CandidateRow]:
    """:func:`candidate_window` in best-fit order: the ``limit``
    best-fitting nodes, a node named like the allocation first when it
    matches."""
    found: list[CandidateRow] = [
        (i, n, u) for i, n, u, _e in best_fit_rows(conn, request, filters,
                                                   limit)]
    preferred = request.preferred_name
    if preferred is None or any(row[1] == preferred for row in found):
        return found
    if isinstance(conn, Session):
        conn = conn.connection()
    named = driver_statement(_named_candidate_query(tuple(filters)),
                             conn.dialect).first(
        conn, {**filter_params(request), "w_name": preferred})
    if named is not None:
        found.insert(0, (int(named[0]), named[1], str(named[2])))
    return found


def visible_to(owner: str | None) -> ColumnElement[bool] | None:
    """The nodes an allocation's owner may see (owned or leased), or
    None (every node) without an owner."""
    if owner is None:
        return None
    return or_(Node.owner == owner, Node.lessee == owner)


def constraint_condition(
    wanted: Constraints,
) -> ColumnElement[bool] | None:
    """The constraints as one SQL condition with their values bound
    (for queries that take a ready-made WHERE clause, such as capacity);
    None without constraints."""
    request = Request(resource_class="", constraints=wanted)
    conditions = [c for f in constraint_filters(request)
                  for c in _predicate(f)]
    if not conditions:
        return None
    return and_(*conditions).params(_constraint_params(request))


_BASIC_STEPS: dict[Kind, tuple[ColumnElement[bool], ...]] = {
    Kind.RESOURCE_CLASS: (
        Node.resource_class == bindparam("f_resource_class"),),
    Kind.AVAILABLE: (Node.provision_state == ns.AVAILABLE,
                     Node.parent_node.is_(None)),
    Kind.NOT_IN_MAINTENANCE: (Node.maintenance.is_(False),),
    Kind.POWER_STATE: (Node.power_state.is_not(None),),
    Kind.UNRESERVED: (Node.instance_uuid.is_(None),
                      Node.allocation_id.is_(None)),
}
_IRONIC_STEPS = {Kind.OWNER: Filter.OWNER, Kind.CANDIDATES:
                 Filter.CANDIDATES, Kind.TRAITS: Filter.TRAITS}


def _step_conditions(step: Step, request: Request
                     ) -> list[ColumnElement[bool]]:
    """SQL conditions of one funnel step (the same ones the allocation
    path uses, split so that each step is counted)."""
    if step.kind in _BASIC_STEPS:
        return list(_BASIC_STEPS[step.kind])
    if step.kind in _IRONIC_STEPS:
        return _predicate(_IRONIC_STEPS[step.kind])
    variants = {(f.kind, f.position): f
                for f in constraint_filters(request)}
    return _predicate(variants[(step.kind, step.index)])


def funnel_counts(
    session: Session,
    request: Request,
    visible: ColumnElement[bool] | None = None,
) -> Funnel:
    """The funnel of ``request``: nodes left after each step, counted in
    one query over the nodes of the resource class (``visible``
    restricts the nodes counted)."""
    sums = []
    conditions: list[ColumnElement[bool]] = []
    for step in funnel_steps(request):
        conditions += _step_conditions(step, request)
        sums.append(func.coalesce(func.sum(
            case((and_(*conditions), 1), else_=0)), 0))
    query = select(*sums).where(
        Node.resource_class == bindparam("f_resource_class"))
    if visible is not None:
        query = query.where(visible)
    row = session.connection().execute(query, filter_params(request)).one()
    return funnel_from_counts(request.selection, [int(v) for v in row])


def request_of(allocation: AnyAllocation) -> Request:
    """The selection request an allocation row asks for."""
    return Request(
        resource_class=allocation.resource_class or "",
        traits=tuple(allocation.traits or ()),
        candidate_nodes=tuple(allocation.candidate_nodes or ()),
        owner=allocation.owner,
        name=allocation.name,
        constraints=constraints_module.from_wire(
            allocation.constraints or {}),
    )
