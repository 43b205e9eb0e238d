"""What an allocation asks for, declared once: :class:`AllocationRequest`.

The command line builds one from its options; the
:class:`~baremetal_allocclient.v1.client.Client` methods that make or
explain allocations take one, or build it from their keyword arguments
(:class:`RequestFields`, :func:`requested`); every module below the client
(``creating``, ``reservation``, ``grouping``, ``explaining``,
``selecting``) takes it whole.  What is done with a request's fields is
done here, once:

* the checks: traits and candidate nodes are lists of non-empty strings,
  ``constraints`` is a :class:`~baremetal_allocclient.constraints.Constraints`,
  ``lease`` a valid duration (:class:`InvalidArgument
  <baremetal_allocclient.exceptions.InvalidArgument>` otherwise, before
  anything is sent);
* the lease step (:meth:`AllocationRequest.stamped`): the lease becomes the
  keys of ``extra`` that record its end, when the operation starts;
* the wire form (:meth:`AllocationRequest.body`): the allocation's JSON
  body, constraints serialised as the extension's document, and the
  selection the funnel evaluates (:meth:`AllocationRequest.selection`).

Where the constraints are evaluated (the server's extension, or the
client's funnel before the create) is decided by
:func:`baremetal_allocclient.v1.selecting.constrain`.

``baremetal_allocclient.v1`` exports this module's public names, loading
it when one is first used, and so does the client: a command that makes
no request (``list``) does not pay for it (``constraints`` and ``leases``
are imported when a request has them).
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from baremetal_allocclient import base_errors
from baremetal_allocclient.v1.resources import strings

if TYPE_CHECKING:
    from baremetal_allocclient import constraints as constraints_module
    from baremetal_allocclient.constraints import Constraints

__all__ = ["AllocationRequest", "RequestFields", "lease_duration",
           "requested"]

#: The fields an explain (and the funnel) reads: the selection.
SELECTION_FIELDS = ("resource_class", "traits", "candidate_nodes", "owner",
                    "constraints")


def lease_duration(lease: datetime.timedelta | str) -> datetime.timedelta:
    """A lease argument as a duration (InvalidArgument when invalid)."""
    from baremetal_allocclient import leases

    try:
        return leases.as_duration(lease)
    except leases.LeaseError as exc:
        raise base_errors.InvalidArgument(str(exc)) from None


@dataclasses.dataclass(frozen=True)
class AllocationRequest:
    """What an allocation asks for.

    Give it to :meth:`Client.allocate
    <baremetal_allocclient.v1.client.Client.allocate>`,
    :meth:`~baremetal_allocclient.v1.client.Client.create_allocation`,
    :meth:`~baremetal_allocclient.v1.client.Client.allocate_group` or
    :meth:`~baremetal_allocclient.v1.client.Client.explain`; one request can
    be used for any number of calls.  Checked when built
    (:class:`~baremetal_allocclient.exceptions.InvalidArgument`); traits and
    candidate nodes are kept as tuples, ``extra`` as a copy, ``lease`` as a
    ``timedelta``.
    """

    #: Resource class the node must have; required unless ``node`` is
    #: given.
    resource_class: str | None = None
    #: Traits the node must have.
    traits: Sequence[str] = ()
    #: Only pick among these nodes (names or UUIDs).
    candidate_nodes: Sequence[str] = ()
    #: Unique name of the allocation (a group's name for
    #: ``allocate_group``: its members are ``NAME-0`` ...).
    name: str | None = None
    #: UUID of the allocation; by default the client chooses one, so that
    #: a create retried after a lost answer cannot make a second one.
    uuid: str | None = None
    #: Arbitrary metadata recorded with the allocation.
    extra: Mapping[str, Any] | None = None
    #: Record an allocation for this already deployed node instead of
    #: picking one (a backfill, API 1.58); ``resource_class`` may then be
    #: omitted.
    node: str | None = None
    #: Project owning the allocation (API 1.60).
    owner: str | None = None
    #: What the node must satisfy besides the above (forbidden traits,
    #: node properties, conductor group, shard, node owner/lessee, node
    #: name): sent to a server that advertises the constraints extension;
    #: elsewhere the SDK selects the nodes first and sends them as
    #: candidate nodes, raising NoMatchingNodes, before creating anything,
    #: when none qualify (see :mod:`~baremetal_allocclient.v1.selecting`).
    constraints: Constraints | None = None
    #: When the allocation should be given back (a ``timedelta`` or
    #: ``"2h"``, ``"1h30m"``...), counted from the start of the call that
    #: makes it and recorded in ``extra`` (see
    #: :mod:`baremetal_allocclient.leases`); ``Client.expire`` or ``serve
    #: --expire-leases`` release it after that.
    lease: datetime.timedelta | str | None = None
    #: Wait in line for a free node, first come first served, within the
    #: call's time budget (the reference server's queue extension).
    #: ``create_allocation`` needs a server that offers the line;
    #: ``allocate`` retries with backoff where there is none.  Not for a
    #: backfill or a group.
    queue: bool = False

    def __post_init__(self) -> None:
        # Checked and normalised here, whoever built the request.
        set_field = object.__setattr__
        for key in ("traits", "candidate_nodes"):
            set_field(self, key, tuple(strings(key, getattr(self, key))
                                       or ()))
        if self.extra is not None:
            set_field(self, "extra", dict(self.extra))
        if self.lease is not None:
            set_field(self, "lease", lease_duration(self.lease))
        if self.constraints is not None:
            _check_constraints(self.constraints)

    def stamped(self, now: datetime.datetime) -> AllocationRequest:
        """The lease step: this request as made at ``now``, its lease
        recorded in ``extra`` (ending ``lease`` after ``now``) and
        ``lease`` then None; the request itself when it has no lease.
        Every allocation made from the result has the same lease end."""
        if self.lease is None:
            return self
        from baremetal_allocclient import leases

        return dataclasses.replace(
            self, extra=leases.with_lease(self.extra, self.lease, now),
            lease=None)

    def body(self) -> dict[str, Any]:
        """The allocation's JSON body: the fields that are set, the
        constraints as the extension's document (``lease`` and ``queue``
        are not fields of the body: see :meth:`stamped`)."""
        body: dict[str, Any] = {}
        for key in ("resource_class", "traits", "candidate_nodes", "name",
                    "uuid", "node", "owner"):
            value = getattr(self, key)
            if isinstance(value, tuple):
                if value:
                    body[key] = list(value)
            elif value is not None:
                body[key] = value
        if self.extra is not None:
            body["extra"] = dict(self.extra)
        if self.constraints:
            body["constraints"] = self.constraints.to_wire()
        return body

    def selection_body(self) -> dict[str, Any]:
        """The part of :meth:`body` that selects nodes (what
        ``POST /v1/allocation_explain`` takes)."""
        return {key: value for key, value in self.body().items()
                if key in SELECTION_FIELDS}

    def selection(self) -> constraints_module.Selection:
        """What the funnel evaluates for this request."""
        from baremetal_allocclient import constraints

        return constraints.Selection(
            resource_class=self.resource_class or "",
            traits=tuple(self.traits),
            candidate_nodes=tuple(self.candidate_nodes), owner=self.owner,
            constraints=self.constraints or constraints.NO_CONSTRAINTS)


def _check_constraints(value: object) -> None:
    from baremetal_allocclient import constraints

    if not isinstance(value, constraints.Constraints):
        raise base_errors.InvalidArgument(
            "constraints must be a baremetal_allocclient.constraints."
            f"Constraints, got {type(value).__name__}")


class RequestFields(TypedDict, total=False):
    """The fields of :class:`AllocationRequest` as keyword arguments: what
    the client's methods take instead of a request (see
    :func:`requested`)."""

    resource_class: str | None
    traits: Iterable[str]
    candidate_nodes: Iterable[str]
    name: str | None
    uuid: str | None
    extra: Mapping[str, Any] | None
    node: str | None
    owner: str | None
    constraints: Constraints | None
    lease: datetime.timedelta | str | None
    queue: bool


def requested(request: AllocationRequest | str | None,
              fields: RequestFields) -> AllocationRequest:
    """The request a client method was given: ``request`` itself, or one
    built from the keyword arguments ``fields``, with ``request`` (when
    given) as its resource class.  Both at once is a TypeError, as is a
    resource class given twice."""
    if isinstance(request, AllocationRequest):
        if fields:
            raise TypeError(
                "give an AllocationRequest or its fields as keyword "
                f"arguments, not both (got {', '.join(sorted(fields))})")
        return request
    values: dict[str, Any] = dict(fields)
    if request is not None:
        if "resource_class" in values:
            raise TypeError("resource_class given twice")
        values["resource_class"] = request
    return AllocationRequest(**values)
