"""Groups spread over failure domains (pure, standard library only).

A group may ask that its members spread over a failure domain: the
node's conductor group, its shard, or one of its properties (such as
``rack``), with at most ``max_per_domain`` members in any one domain and,
optionally, at least ``min_domains`` domains.  Shared by the reference
server, which decides it inside the group's one transaction, and the
SDK, which decides it on the client against real Ironic (best effort
there: another client may take a chosen node before its member is
made, and the group then fails and is rolled back).

:func:`choose` is the one decision: from the free matching nodes, in the
order they are to be tried, it takes members round robin over the
domains, those with the most free nodes first (the first node of each
domain, then the second of each...), so a group uses as many domains
as it can, never more than
``max_per_domain`` nodes of one; a node without a value for the domain
is never taken.  When it cannot place every member it says which
domains ran short (:meth:`Placement.reason`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from baremetal_allocclient import constraints

#: The domains a group may spread over, besides ``property:KEY``.
FIELDS = ("conductor_group", "shard")
PROPERTY_PREFIX = "property:"
#: What a group may spread over, as ``GET /v1`` lists it in the groups
#: extension's ``spread`` (``property:`` standing for any property key).
ADVERTISED = (*FIELDS, PROPERTY_PREFIX)
#: Largest ``max_per_domain`` / ``min_domains`` (a group's largest size).
MAX_COUNT = 1000

T = TypeVar("T")


class SpreadError(ValueError):
    """A spread that cannot be asked for (bad domain or bounds)."""


@dataclasses.dataclass(frozen=True)
class Spread:
    """Spread a group over ``over``: at most ``max_per_domain`` members
    per domain and at least ``min_domains`` domains (None: any)."""

    over: str
    max_per_domain: int = 1
    min_domains: int | None = None

    def __post_init__(self) -> None:
        if self.over not in FIELDS and not (
                self.over.startswith(PROPERTY_PREFIX)
                and 0 < len(self.property_key or "") <= constraints.MAX_KEY):
            raise SpreadError(
                "spread over conductor_group, shard or property:KEY, got "
                f"{self.over!r}")
        for name in ("max_per_domain", "min_domains"):
            value = getattr(self, name)
            if value is None and name == "min_domains":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or \
                    not 1 <= value <= MAX_COUNT:
                raise SpreadError(
                    f"spread {name} must be 1 to {MAX_COUNT}, got {value!r}")

    @property
    def property_key(self) -> str | None:
        """The property's key for ``property:KEY`` (else None)."""
        if self.over.startswith(PROPERTY_PREFIX):
            return self.over[len(PROPERTY_PREFIX):]
        return None

    @property
    def label(self) -> str:
        """``rack``, ``conductor_group``: the domain's name in texts."""
        return self.property_key or self.over

    def domain_of(self, node: Mapping[str, Any]) -> str | None:
        """A node's domain (Ironic's JSON node document); None: it has
        none (a missing property or shard)."""
        key = self.property_key
        if key is not None:
            return constraints.as_text((node.get("properties") or {})
                                       .get(key))
        if self.over == "conductor_group":
            return (node.get("conductor_group") or "").lower()
        shard = node.get("shard")
        return shard if isinstance(shard, str) else None

    def to_wire(self) -> dict[str, Any]:
        """The ``spread`` field of a group's create."""
        body: dict[str, Any] = {"over": self.over,
                                "max_per_domain": self.max_per_domain}
        if self.min_domains is not None:
            body["min_domains"] = self.min_domains
        return body

    def check(self, count: int) -> None:
        """Raise :class:`SpreadError` when no fleet could place ``count``
        members so (more domains than members asked)."""
        if self.min_domains is not None and self.min_domains > count:
            raise SpreadError(
                f"a group of {count} cannot span {self.min_domains} "
                f"domains")


def from_wire(body: Mapping[str, Any] | None) -> Spread | None:
    """Parse the ``spread`` field (None: no spread)."""
    if body is None:
        return None
    if not isinstance(body, Mapping):
        raise SpreadError("spread must be an object")
    unknown = set(body) - {"over", "max_per_domain", "min_domains"}
    if unknown:
        raise SpreadError(f"unknown spread fields: {sorted(unknown)}")
    over = body.get("over")
    if not isinstance(over, str):
        raise SpreadError("spread needs over")
    return Spread(over, body.get("max_per_domain", 1),
                  body.get("min_domains"))


@dataclasses.dataclass(frozen=True)
class Placement(Generic[T]):
    """What :func:`choose` decided: the members' nodes (all of them, or
    none when it could not place every member), and the counts per
    domain that explain it."""

    spread: Spread
    count: int
    chosen: tuple[T, ...]
    #: Members per domain (of the chosen nodes).
    members: dict[str, int]
    #: Free matching nodes per domain, and those without a domain.
    free: dict[str, int]
    undomained: int

    @property
    def placed(self) -> bool:
        """Whether every member has a node."""
        return len(self.chosen) == self.count

    def reason(self) -> str:
        """Why the members could not be placed: what the spread needs,
        the free nodes of each domain, and the domains that ran short."""
        sp = self.spread
        label = sp.label
        usable = sum(min(n, sp.max_per_domain) for n in self.free.values())
        need = (f"{self.count} members, at most {sp.max_per_domain} per "
                f"{label}")
        if sp.min_domains is not None:
            need += f", at least {sp.min_domains} {label} domains"
        free = sorted(self.free.items())
        per = ", ".join(f"{d or '(empty)'} {n} free"
                        for d, n in free) or "no domain"
        short = [d or "(empty)" for d, n in free if n < sp.max_per_domain]
        text = (f"spread over {label} cannot place {need}: "
                f"{min(usable, self.count)} placeable ({per}")
        if self.undomained:
            text += f"; {self.undomained} matching nodes have no {label}"
        text += ")"
        if short:
            text += f"; ran short: {', '.join(short)}"
        return text

    def as_dict(self) -> dict[str, Any]:
        """For a group's answer and ``explain``."""
        return {"over": self.spread.over,
                "max_per_domain": self.spread.max_per_domain,
                "min_domains": self.spread.min_domains,
                "members_per_domain": dict(sorted(self.members.items())),
                "free_per_domain": dict(sorted(self.free.items()))}


def choose(spread: Spread, count: int, nodes: Sequence[T],
           domain: Callable[[T], str | None],
           known: Iterable[str | None] = ()) -> Placement[T]:
    """Nodes for ``count`` members from ``nodes`` (free and matching, in
    the order to try them): round robin over the domains, the most free
    nodes first (ties: the order they first appear), at most
    ``max_per_domain`` per domain, and at least ``min_domains`` domains;
    nothing chosen when that cannot be done.  ``known``: every domain of
    the resource class, so that those with no free node are named too."""
    by_domain: dict[str, list[T]] = {}
    undomained = 0
    for node in nodes:
        name = domain(node)
        if name is None:
            undomained += 1
        else:
            by_domain.setdefault(name, []).append(node)
    # The domains with the most free nodes first (ties: first seen), so
    # that successive groups wear the domains down evenly.
    ranked = sorted(by_domain.items(), key=lambda item: -len(item[1]))
    chosen: list[T] = []
    members: dict[str, int] = {}
    for depth in range(spread.max_per_domain):
        for name, found in ranked:
            if len(chosen) < count and depth < len(found):
                chosen.append(found[depth])
                members[name] = members.get(name, 0) + 1
    free = {name: len(found) for name, found in ranked}
    free.update({name: 0 for name in sorted(n for n in known
                                            if n is not None)
                 if name not in free})
    enough = len(chosen) == count and (
        spread.min_domains is None or len(members) >= spread.min_domains)
    if not enough:
        return Placement(spread, count, (), {}, free, undomained)
    return Placement(spread, count, tuple(chosen), members, free, undomained)
