"""Node constraints beyond traits, and the selection funnel (pure).

Shared by the SDK (client-side prefiltering against Ironic, ``explain``)
and the reference server (which evaluates the same constraints in SQL and
words ``last_error`` and ``explain`` from the same steps).  Standard
library only: the server imports this module, never the SDK.

A request is narrowed by :func:`steps`, in the order of the one table
:data:`FUNNEL`: resource class, ``available``, not in maintenance, with a
power state, unreserved, the allocation's owner (node owner *or* lessee,
as Ironic matches it), candidate nodes -- Ironic's one query --, then
required traits (Ironic's second stage), then the constraints
extension's steps: node owner, node lessee, forbidden traits, any of
some traits, each property constraint, alternatives (any of several
sets of property constraints), conductor group, shard, required
node name.  The server's selection SQL, ``last_error``, ``explain``
and the SDK's prefilter all take this order and :func:`reason`'s
wording, so the message and the funnel of one request name the same
step, in Ironic's words for Ironic's steps.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from baremetal_allocclient import extension_names

#: Bounds on what one request may carry (server schema and SDK checks).
MAX_PROPERTY_CONSTRAINTS = 20
MAX_FORBIDDEN_TRAITS = 50
MAX_KEY = 255
#: Alternatives of one request (``any_of``), each of at most
#: :data:`MAX_PROPERTY_CONSTRAINTS` terms.
MAX_ALTERNATIVES = 10

#: The extension's name, as advertised in ``GET /v1`` ("extensions").
EXTENSION = extension_names.CONSTRAINTS
#: Header naming the extensions a request opts into (comma separated).
EXTENSION_HEADER = extension_names.EXTENSION_HEADER
#: The reference server's explain endpoint (part of the extension).
EXPLAIN_PATH = "/v1/allocation_explain"


class ConstraintError(ValueError):
    """A constraint that cannot be evaluated (bad key, value or operator)."""


def as_number(value: Any) -> float | None:
    """A property value as a number: ints, floats and numeric strings
    ("8", " 16.5 "); booleans, other strings and non-finite values are
    not numbers."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def as_text(value: Any) -> str | None:
    """A property value as text for exact matching: strings as they are,
    booleans as ``true``/``false``, whole numbers without a fraction,
    anything else as compact JSON; None stays None."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class Op(enum.Enum):
    """How a property constraint compares."""

    MIN = "min"  # numeric value >= the constraint
    MAX = "max"  # numeric value <= the constraint
    EQ = "eq"  # equal: numerically when both are numbers, else as text
    IN = "in"  # equal (as ``eq``) to one of a set of values
    NOT_IN = "not_in"  # missing, or equal to none of a set of values
    EXISTS = "exists"  # the key is present (any value, even null)
    NOT_EXISTS = "not_exists"  # the key is absent


#: Operators whose value is a number / a set of values / nothing (the
#: wire carries ``true``).
NUMERIC_OPS = frozenset({Op.MIN, Op.MAX})
SET_OPS = frozenset({Op.IN, Op.NOT_IN})
KEY_OPS = frozenset({Op.EXISTS, Op.NOT_EXISTS})
#: Largest set an ``in`` / ``not_in`` constraint may carry.
MAX_SET = 50


def equal(value: Any, wanted: str) -> bool:
    """``eq``'s comparison of a property value with a constraint's
    value (text): numerically when both are numbers, else as text."""
    number = as_number(value)
    wanted_number = as_number(wanted)
    if number is not None and wanted_number is not None:
        return number == wanted_number
    return as_text(value) == wanted


def _wire_value(text: str) -> Any:
    """A numeric constraint value as a JSON number (8, not 8.0)."""
    number = as_number(text)
    assert number is not None  # checked when built
    return int(number) if number.is_integer() else number


@dataclasses.dataclass(frozen=True)
class PropertyConstraint:
    """One constraint on ``node.properties[key]``."""

    key: str
    op: Op
    value: str  # the value as text (see :func:`as_text`); "" for sets/keys
    #: The set of an ``in`` / ``not_in`` constraint (texts, in order).
    values: tuple[str, ...] = ()

    @property
    def number(self) -> float | None:
        """The value as a number (always set for ``MIN`` and ``MAX``)."""
        return as_number(self.value)

    @property
    def label(self) -> str:
        """``cpus>=8``, ``cpus<=8``, ``cpu_arch=x86_64``, ``rack in
        (r1,r2)``, ``rack not in (r1)``, ``gpu exists``, ``gpu not
        exists``."""
        if self.op in SET_OPS:
            word = "in" if self.op is Op.IN else "not in"
            return f"{self.key} {word} ({','.join(self.values)})"
        if self.op in KEY_OPS:
            word = "exists" if self.op is Op.EXISTS else "not exists"
            return f"{self.key} {word}"
        sign = {Op.MIN: ">=", Op.MAX: "<="}.get(self.op, "=")
        return f"{self.key}{sign}{self.value}"

    def to_wire(self) -> dict[str, Any]:
        """``{"key": ..., "min": 8}``, ``{"key": ..., "eq": "x86_64"}``,
        ``{"key": ..., "in": ["r1", "r2"]}``, ``{"key": ..., "exists":
        true}``..."""
        if self.op in SET_OPS:
            return {"key": self.key, self.op.value: list(self.values)}
        if self.op in KEY_OPS:
            return {"key": self.key, self.op.value: True}
        if self.op is Op.EQ:
            return {"key": self.key, "eq": self.value}
        return {"key": self.key, self.op.value: _wire_value(self.value)}

    def matches(self, properties: Mapping[str, Any] | None) -> bool:
        """Whether a node's properties satisfy this constraint.  Only
        ``not_in`` and ``not_exists`` match a node without the key."""
        present = bool(properties) and self.key in (properties or {})
        if self.op in KEY_OPS:
            return present is (self.op is Op.EXISTS)
        if not present:
            return self.op is Op.NOT_IN
        assert properties is not None
        value = properties[self.key]
        if self.op in SET_OPS:
            found = any(equal(value, member) for member in self.values)
            return found is (self.op is Op.IN)
        if self.op is Op.EQ:
            return equal(value, self.value)
        number, wanted = as_number(value), self.number
        if number is None or wanted is None:
            return False
        return number >= wanted if self.op is Op.MIN else number <= wanted


def property_constraint(key: str, op: Op | str, value: Any = True
                        ) -> PropertyConstraint:
    """Build and check one property constraint: a number for ``min`` and
    ``max``, a string or number for ``eq``, a list of 1 to
    :data:`MAX_SET` strings or numbers for ``in`` and ``not_in``, and
    ``True`` (the default) for ``exists`` and ``not_exists``."""
    if not isinstance(key, str) or not key or len(key) > MAX_KEY:
        raise ConstraintError(
            f"property key must be 1 to {MAX_KEY} characters, got {key!r}"
        )
    try:
        kind = Op(op) if isinstance(op, str) else op
    except ValueError:
        raise ConstraintError(
            f"property {key}: unknown operator {op!r}") from None
    if kind in KEY_OPS:
        if value is not True:
            raise ConstraintError(
                f"property {key}: {kind.value} takes the value true")
        return PropertyConstraint(key, kind, "")
    if kind in SET_OPS:
        return PropertyConstraint(key, kind, "", _set_of(key, kind, value))
    text = _scalar(key, value)
    if kind in NUMERIC_OPS and as_number(value) is None:
        word = "minimum" if kind is Op.MIN else "maximum"
        raise ConstraintError(
            f"property {key}: a {word} must be a number, got {value!r}"
        )
    return PropertyConstraint(key, kind, text)


def _scalar(key: str, value: Any) -> str:
    text = as_text(value)
    if text is None or isinstance(value, dict | list | tuple):
        raise ConstraintError(
            f"property {key}: value must be a string or a number"
        )
    return text


def _set_of(key: str, kind: Op, value: Any) -> tuple[str, ...]:
    if (not isinstance(value, list | tuple) or not value
            or len(value) > MAX_SET):
        raise ConstraintError(
            f"property {key}: {kind.value} takes a list of 1 to {MAX_SET} "
            "strings or numbers")
    return tuple(dict.fromkeys(_scalar(key, member) for member in value))


class Order(enum.Enum):
    """The order matching nodes are tried in."""

    #: Any matching node: the first free one from a random place in the
    #: fleet (parallel requests rarely collide).  The default.
    FIRST_FIT = "first_fit"
    #: The node whose properties exceed the request least
    #: (:func:`excess`), ties by UUID: keeps the big nodes free.
    BEST_FIT = "best_fit"


#: What best fit measures when a request sets no minimum: the node's
#: size (a node without one of them counts 0 for it).
DEFAULT_FIT_KEYS = ("cpus", "memory_mb", "local_gb")


@dataclasses.dataclass(frozen=True)
class Constraints:
    """What a node must satisfy besides resource class, traits,
    candidates and the allocation's owner."""

    forbidden_traits: tuple[str, ...] = ()
    #: The node must have at least one of these traits.
    any_traits: tuple[str, ...] = ()
    properties: tuple[PropertyConstraint, ...] = ()
    #: Alternatives: the node must satisfy every term of at least one.
    any_of: tuple[tuple[PropertyConstraint, ...], ...] = ()
    conductor_group: str | None = None
    shard: str | None = None
    node_owner: str | None = None
    node_lessee: str | None = None
    #: Try the node with this name first (any API version) ...
    node_name: str | None = None
    #: ... or take only that node.
    require_node_name: bool = False
    #: The order to try matching nodes in (None: the server's default,
    #: first fit unless its admin chose best fit).
    order: Order | None = None

    def __bool__(self) -> bool:
        # (``is`` first: most requests hold the shared empty one)
        return self is not NO_CONSTRAINTS and self != NO_CONSTRAINTS

    def to_wire(self) -> dict[str, Any]:
        """The extension's JSON document (only the fields set)."""
        body: dict[str, Any] = {}
        if self.forbidden_traits:
            body["forbidden_traits"] = list(self.forbidden_traits)
        if self.any_traits:
            body["any_traits"] = list(self.any_traits)
        if self.properties:
            body["properties"] = [p.to_wire() for p in self.properties]
        if self.any_of:
            body["any_of"] = [[p.to_wire() for p in terms]
                              for terms in self.any_of]
        for name in ("conductor_group", "shard", "node_owner",
                     "node_lessee", "node_name"):
            if getattr(self, name) is not None:
                body[name] = getattr(self, name)
        if self.require_node_name:
            body["require_node_name"] = True
        if self.order is not None:
            body["order"] = self.order.value
        return body


#: No constraint at all (what most allocations have).
NO_CONSTRAINTS = Constraints()

#: What the extension's version 1 understood from the start; a server
#: that understands more lists it all in ``GET /v1`` (``features``).
BASE_FEATURES = frozenset({"min", "eq", "forbidden_traits"})
#: Everything this model can ask for.
FEATURES = BASE_FEATURES | {op.value for op in Op} | {
    "any_traits", "any_of", "order"}


def features_used(wanted: Constraints) -> frozenset[str]:
    """The features of :data:`FEATURES` that ``wanted`` asks a server to
    understand (pure)."""
    terms = [*wanted.properties,
             *(term for terms in wanted.any_of for term in terms)]
    used = {term.op.value for term in terms}
    for name in ("forbidden_traits", "any_traits", "any_of"):
        if getattr(wanted, name):
            used.add(name)
    if wanted.order is not None:
        used.add("order")
    return frozenset(used)


def from_wire(body: Mapping[str, Any]) -> Constraints:
    """Parse the extension's document (already schema-checked on the
    server; raises :class:`ConstraintError` on bad content)."""
    if not body:
        return NO_CONSTRAINTS
    props = [_property_of(item) for item in body.get("properties") or ()]
    any_of = tuple(tuple(_property_of(item) for item in terms)
                   for terms in body.get("any_of") or ())
    if any(not terms for terms in any_of):
        raise ConstraintError("each alternative of any_of needs a term")
    require = bool(body.get("require_node_name"))
    if require and not body.get("node_name"):
        raise ConstraintError("require_node_name needs node_name")
    return Constraints(
        forbidden_traits=tuple(dict.fromkeys(
            body.get("forbidden_traits") or ())),
        any_traits=tuple(dict.fromkeys(body.get("any_traits") or ())),
        properties=tuple(props),
        any_of=any_of,
        conductor_group=_lower(body.get("conductor_group")),
        shard=body.get("shard"),
        node_owner=body.get("node_owner"),
        node_lessee=body.get("node_lessee"),
        node_name=body.get("node_name"),
        require_node_name=require,
        order=_order(body.get("order")),
    )


def _property_of(item: Any) -> PropertyConstraint:
    ops = [op for op in Op if op.value in item]
    if len(ops) != 1:
        raise ConstraintError(
            "each property constraint needs exactly one of "
            + ", ".join(op.value for op in Op))
    return property_constraint(item.get("key"), ops[0], item[ops[0].value])


def _order(value: Any) -> Order | None:
    if value is None:
        return None
    try:
        return Order(value)
    except ValueError:
        raise ConstraintError(
            f"order must be one of {', '.join(o.value for o in Order)}"
        ) from None


# -- best fit -----------------------------------------------------------


def fit_terms(wanted: Constraints) -> tuple[tuple[str, float], ...]:
    """What best fit measures: (key, floor) for each ``min`` property
    constraint, or (key, 0) for each of :data:`DEFAULT_FIT_KEYS` when the
    request sets no minimum."""
    terms = tuple((p.key, p.number) for p in wanted.properties
                  if p.op is Op.MIN and p.number is not None)
    return terms or tuple((key, 0.0) for key in DEFAULT_FIT_KEYS)


def fit_scale(floor: float) -> float:
    """What one term's excess is divided by: its floor (at least 1), so
    that 2 CPUs over 4 weigh as much as 8 GiB over 16."""
    return max(abs(floor), 1.0)


def excess(terms: Sequence[tuple[str, float]],
           properties: Mapping[str, Any] | None) -> float:
    """How much a node's properties exceed the request: the sum over
    ``terms`` of (value - floor) / :func:`fit_scale` (floor), a missing
    or non-numeric value counting 0.  The server computes the same in
    SQL."""
    total = 0.0
    for key, floor in terms:
        number = as_number((properties or {}).get(key))
        if number is not None:
            total += (number - floor) / fit_scale(floor)
    return total


def best_fit(wanted: Constraints, nodes: Iterable[Mapping[str, Any]]
             ) -> list[Mapping[str, Any]]:
    """Nodes (Ironic's JSON documents) in best-fit order: least
    :func:`excess` first, ties by UUID."""
    terms = fit_terms(wanted)
    return sorted(nodes, key=lambda n: (excess(terms, n.get("properties")),
                                        str(n.get("uuid"))))


#: How many of the best-fitting nodes ``explain`` shows.
EXPLAIN_FIRST = 5


def order_document(order: Order, wanted: Constraints,
                   ranked: Iterable[tuple[str, float]] = ()
                   ) -> dict[str, Any]:
    """The ``order`` entry of ``explain``: the order, and for best fit
    what it measured and the first :data:`EXPLAIN_FIRST` nodes of
    ``ranked`` ((name or UUID, excess), best first)."""
    if order is Order.FIRST_FIT:
        return {"order": order.value}
    return {"order": order.value, "measured": fit_label(wanted),
            "first": [{"node": node, "excess": round(value, 6)}
                      for node, value in list(ranked)[:EXPLAIN_FIRST]]}


def fit_label(wanted: Constraints) -> list[str]:
    """What best fit measured, for ``explain``: ``["cpus>=4"]``, or the
    default keys."""
    return [f"{key}>={as_text(floor)}" if floor else key
            for key, floor in fit_terms(wanted)]


def _lower(value: str | None) -> str | None:
    """Conductor groups are case-insensitive (Ironic stores them lower)."""
    return value.lower() if isinstance(value, str) else None


# -- the funnel ---------------------------------------------------------


class Kind(enum.Enum):
    """One narrowing step of the funnel."""

    RESOURCE_CLASS = "resource_class"
    AVAILABLE = "available"
    NOT_IN_MAINTENANCE = "not_in_maintenance"
    POWER_STATE = "power_state"
    UNRESERVED = "unreserved"
    OWNER = "owner"
    CANDIDATES = "candidate_nodes"
    TRAITS = "traits"
    NODE_OWNER = "node_owner"
    NODE_LESSEE = "node_lessee"
    FORBIDDEN_TRAITS = "forbidden_traits"
    ANY_TRAITS = "any_traits"
    PROPERTY = "property"
    ANY_OF = "any_of"
    CONDUCTOR_GROUP = "conductor_group"
    SHARD = "shard"
    NODE_NAME = "node_name"


class Wording(enum.Enum):
    """Which message names a step that left no node (see :func:`reason`).

    Ironic filters in two stages: one query (resource class, state,
    maintenance, power state, unassociated, owner, candidate nodes) that
    it words as a resource-class (or candidate) failure, then traits.
    """

    IRONIC_QUERY = "query"
    IRONIC_TRAITS = "traits"
    CONSTRAINT = "constraint"


@dataclasses.dataclass(frozen=True)
class Selection:
    """Everything a request selects by (an allocation plus constraints)."""

    resource_class: str
    traits: tuple[str, ...] = ()
    candidate_nodes: tuple[str, ...] = ()
    owner: str | None = None
    constraints: Constraints = Constraints()


@dataclasses.dataclass(frozen=True)
class StepKind:
    """One row of :data:`FUNNEL`: a step, how many times it applies to a
    selection (0: not at all; one per property constraint) and how its
    emptying is worded.  How it is counted: :func:`node_passes` on a
    node list (the SDK), the same condition in SQL on the server."""

    kind: Kind
    applies: Callable[[Selection], int]
    wording: Wording


def _once(test: Callable[[Selection], object]) -> Callable[[Selection], int]:
    return lambda sel: 1 if test(sel) else 0


def _always(_selection: Selection) -> int:
    return 1


#: The one funnel: every step, in the order the server selects, counts and
#: words them and the SDK prefilters.  Ironic's first query comes first
#: (its steps in any order give the same message), then Ironic's traits,
#: then the constraints extension.
FUNNEL: tuple[StepKind, ...] = (
    StepKind(Kind.RESOURCE_CLASS, _always, Wording.IRONIC_QUERY),
    StepKind(Kind.AVAILABLE, _always, Wording.IRONIC_QUERY),
    StepKind(Kind.NOT_IN_MAINTENANCE, _always, Wording.IRONIC_QUERY),
    StepKind(Kind.POWER_STATE, _always, Wording.IRONIC_QUERY),
    StepKind(Kind.UNRESERVED, _always, Wording.IRONIC_QUERY),
    StepKind(Kind.OWNER, _once(lambda s: s.owner), Wording.IRONIC_QUERY),
    StepKind(Kind.CANDIDATES, _once(lambda s: s.candidate_nodes),
             Wording.IRONIC_QUERY),
    StepKind(Kind.TRAITS, _once(lambda s: s.traits), Wording.IRONIC_TRAITS),
    StepKind(Kind.NODE_OWNER,
             _once(lambda s: s.constraints.node_owner is not None),
             Wording.CONSTRAINT),
    StepKind(Kind.NODE_LESSEE,
             _once(lambda s: s.constraints.node_lessee is not None),
             Wording.CONSTRAINT),
    StepKind(Kind.FORBIDDEN_TRAITS,
             _once(lambda s: s.constraints.forbidden_traits),
             Wording.CONSTRAINT),
    StepKind(Kind.ANY_TRAITS, _once(lambda s: s.constraints.any_traits),
             Wording.CONSTRAINT),
    StepKind(Kind.PROPERTY, lambda s: len(s.constraints.properties),
             Wording.CONSTRAINT),
    StepKind(Kind.ANY_OF, _once(lambda s: s.constraints.any_of),
             Wording.CONSTRAINT),
    StepKind(Kind.CONDUCTOR_GROUP,
             _once(lambda s: s.constraints.conductor_group is not None),
             Wording.CONSTRAINT),
    StepKind(Kind.SHARD, _once(lambda s: s.constraints.shard is not None),
             Wording.CONSTRAINT),
    StepKind(Kind.NODE_NAME,
             _once(lambda s: s.constraints.require_node_name),
             Wording.CONSTRAINT),
)
_ROWS = {row.kind: row for row in FUNNEL}


@dataclasses.dataclass(frozen=True)
class Step:
    """One funnel step; ``index`` picks the property constraint."""

    kind: Kind
    index: int = 0

    def name(self, selection: Selection) -> str:
        """Stable name of the step (``property:cpus>=8`` for properties)."""
        if self.kind is Kind.PROPERTY:
            prop = selection.constraints.properties[self.index]
            return f"property:{prop.label}"
        return str(self.kind.value)


def steps(selection: Selection) -> list[Step]:
    """The steps of :data:`FUNNEL` that apply to ``selection``, in
    order."""
    return [Step(row.kind, index) for row in FUNNEL
            for index in range(row.applies(selection))]


def node_passes(step: Step, selection: Selection,
                node: Mapping[str, Any]) -> bool:
    """Whether a node (Ironic's JSON node document) passes one step."""
    con = selection.constraints
    kind = step.kind
    if kind is Kind.PROPERTY:
        return con.properties[step.index].matches(node.get("properties"))
    if kind is Kind.ANY_OF:
        props = node.get("properties")
        return any(all(p.matches(props) for p in terms)
                   for terms in con.any_of)
    if kind in _FIELD_TESTS:
        return bool(_FIELD_TESTS[kind](node, selection))
    traits = set(node.get("traits") or ())
    if kind is Kind.TRAITS:
        return set(selection.traits) <= traits
    if kind is Kind.ANY_TRAITS:
        return bool(set(con.any_traits) & traits)
    return not set(con.forbidden_traits) & traits


def _unreserved(node: Mapping[str, Any], _sel: Selection) -> bool:
    return not node.get("instance_uuid") and not node.get("allocation_uuid")


def _owned(node: Mapping[str, Any], sel: Selection) -> bool:
    return sel.owner in (node.get("owner"), node.get("lessee"))


def _group(node: Mapping[str, Any], sel: Selection) -> bool:
    group = (node.get("conductor_group") or "").lower()
    return group == sel.constraints.conductor_group


def _candidate(node: Mapping[str, Any], sel: Selection) -> bool:
    wanted = set(sel.candidate_nodes)
    return node.get("uuid") in wanted or node.get("name") in wanted


_FIELD_TESTS: dict[Kind, Any] = {
    Kind.RESOURCE_CLASS:
        lambda n, s: n.get("resource_class") == s.resource_class,
    Kind.AVAILABLE: lambda n, s: n.get("provision_state") == "available",
    Kind.NOT_IN_MAINTENANCE: lambda n, s: not n.get("maintenance"),
    Kind.POWER_STATE: lambda n, s: n.get("power_state") is not None,
    Kind.UNRESERVED: _unreserved,
    Kind.OWNER: _owned,
    Kind.NODE_OWNER: lambda n, s: n.get("owner") == s.constraints.node_owner,
    Kind.NODE_LESSEE:
        lambda n, s: n.get("lessee") == s.constraints.node_lessee,
    Kind.CONDUCTOR_GROUP: _group,
    Kind.SHARD: lambda n, s: n.get("shard") == s.constraints.shard,
    Kind.NODE_NAME: lambda n, s: n.get("name") == s.constraints.node_name,
    Kind.CANDIDATES: _candidate,
}


@dataclasses.dataclass(frozen=True)
class Funnel:
    """How many nodes are left after each step, in order."""

    counts: tuple[tuple[str, int], ...]

    @property
    def candidates(self) -> int:
        """Nodes passing every step."""
        return self.counts[-1][1] if self.counts else 0

    @property
    def first_empty(self) -> str | None:
        """The first step that left no node (None: some nodes pass)."""
        for name, count in self.counts:
            if count == 0:
                return name
        return None

    def as_dict(self) -> dict[str, Any]:
        """The ``explain`` document."""
        return {
            "funnel": [{"step": name, "count": count}
                       for name, count in self.counts],
            "candidates": self.candidates,
            "first_empty": self.first_empty,
        }

    def one_line(self) -> str:
        """``resource_class 10 > available 8 > ... > traits 0``."""
        line = " > ".join(f"{name} {count}" for name, count in self.counts)
        empty = self.first_empty
        return f"{line} (emptied by {empty})" if empty else line


def funnel_from_counts(selection: Selection, counts: Sequence[int]
                       ) -> Funnel:
    """Name cumulative counts, one per step of :func:`steps`."""
    names = [step.name(selection) for step in steps(selection)]
    return Funnel(tuple(zip(names, counts, strict=True)))


def funnel(selection: Selection, nodes: Iterable[Mapping[str, Any]]
           ) -> tuple[Funnel, list[Mapping[str, Any]]]:
    """The funnel over a node list, and the nodes passing every step."""
    survivors = list(nodes)
    counts = []
    for step in steps(selection):
        survivors = [n for n in survivors
                     if node_passes(step, selection, n)]
        counts.append(len(survivors))
    return funnel_from_counts(selection, counts), survivors


def preferred_first(nodes: Sequence[Mapping[str, Any]],
                    name: str | None) -> list[Mapping[str, Any]]:
    """The node named ``name`` (if among ``nodes``) first, then the rest."""
    return sorted(nodes, key=lambda n: name is None or n.get("name") != name)


def reason(selection: Selection, emptied: Step) -> str:
    """Why no node matched, naming the step that left none, in Ironic's
    words for Ironic's steps (Ironic blames the resource class, or the
    candidates when some were named, for every step of its query)."""
    wording = _ROWS[emptied.kind].wording
    rc = selection.resource_class
    if wording is Wording.IRONIC_QUERY:
        if selection.candidate_nodes:
            return ("none of the requested nodes are available and match "
                    f"the resource class {rc}")
        return f"no available nodes match the resource class {rc}"
    if wording is Wording.IRONIC_TRAITS:
        return ("no suitable nodes have the requested traits "
                f"{', '.join(selection.traits)}")
    label = _label(selection, emptied)
    return f"no suitable nodes match the constraint {label}"


def _label(selection: Selection, step: Step) -> str:
    con = selection.constraints
    if step.kind is Kind.PROPERTY:
        return f"property {con.properties[step.index].label}"
    if step.kind is Kind.FORBIDDEN_TRAITS:
        return f"forbidden_traits {', '.join(con.forbidden_traits)}"
    if step.kind is Kind.ANY_TRAITS:
        return f"any_traits {', '.join(con.any_traits)}"
    if step.kind is Kind.ANY_OF:
        return "any_of " + " | ".join(
            ", ".join(p.label for p in terms) for terms in con.any_of)
    value = {Kind.NODE_OWNER: con.node_owner, Kind.NODE_LESSEE:
             con.node_lessee, Kind.CONDUCTOR_GROUP: con.conductor_group,
             Kind.SHARD: con.shard, Kind.NODE_NAME: con.node_name}
    return f"{step.kind.value} {value.get(step.kind)}"


def empty_step(selection: Selection, funnel_: Funnel) -> Step | None:
    """The first step of ``funnel_`` that left no node (None: some
    nodes pass every step)."""
    for step, (_name, count) in zip(steps(selection), funnel_.counts,
                                    strict=True):
        if count == 0:
            return step
    return None


def with_funnel(reason_: str, funnel_: Funnel) -> str:
    """A reason followed by the whole funnel in one line (what clients
    that opted into the extension read)."""
    return f"{reason_}; funnel: {funnel_.one_line()}"


def empty_reason(selection: Selection, funnel_: Funnel) -> str:
    """Why nothing matched (:func:`reason` of the step that emptied the
    set) followed by the whole funnel."""
    emptied = empty_step(selection, funnel_)
    assert emptied is not None, "the funnel lets nodes through"
    return with_funnel(reason(selection, emptied), funnel_)
