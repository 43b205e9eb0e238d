"""What the SDK's feature modules need from a client.

Two protocols, one over the other:

* :class:`Session`: HTTP with version negotiation, extension discovery and
  the time sources.  The request modules (``allocations``, ``nodes``,
  ``listing``, ``creating``, ``polling``, ``explaining``, ``capacity``,
  ``extensions``) are functions over it.
* :class:`AllocationClient`: a session plus the allocation calls.  The
  workflows built from those calls (``reservation``, ``grouping``,
  ``leasing``) use it, so a caller can hand them any object with these
  calls (the command line's tests hand them a fake).  A create takes the
  whole :class:`~baremetal_allocclient.v1.request.AllocationRequest`.

:class:`~baremetal_allocclient.v1.client.Client` satisfies both (its
session part through :class:`~baremetal_allocclient.v1.session.ApiSession`)
and delegates to those modules.  So the modules sit below the client, and
none of them imports it.

The members a caller of the client has no use for keep a leading
underscore: they are the contract between the client and its feature
modules, not part of the client's API (the time and jitter sources are
test hooks).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import random

    from baremetal_allocclient.v1 import budget, transport, waiting
    from baremetal_allocclient.v1.request import AllocationRequest
    from baremetal_allocclient.v1.resources import Allocation, Node


class Session(Protocol):
    """HTTP with version negotiation, discovery, and the time sources."""

    #: Requests (``request``/``json``), the negotiated version, the
    #: endpoint and the per-request timeout.
    _transport: transport.Transport
    #: The monotonic clock deadlines and waits count on.
    _clock: budget.Clock
    #: The jitter source of the pauses between attempts.
    _rng: random.Random
    #: Whether a create asked the server for a place in line (then
    #: allocation reads ask it for the position too).
    _queue_used: bool
    #: Whether a create's answer said the server offers the change
    #: stream.
    _watch_offered: bool

    def sleep(self, seconds: float) -> None:
        """Pause (injected by tests)."""

    def deadline(self, timeout: float | None) -> budget.Deadline:
        """A time budget on ``_clock`` (``None``: no limit)."""

    def _v1_document(self) -> Any:
        """``GET /v1`` (where extensions are advertised), read once."""

    def _known_extensions(self) -> list[str]:
        """Extensions to opt into on every allocation request, without a
        request of its own."""


class AllocationClient(Session, Protocol):
    """The allocation calls the workflows make (see
    :class:`~baremetal_allocclient.v1.client.Client` for each one)."""

    def create_allocation(
        self, request: AllocationRequest, /, *,
        prefer_wait: float | None = None,
        deadline: budget.Deadline | None = None,
    ) -> Allocation:
        """``POST /v1/allocations``, safe to repeat."""

    def get_allocation(self, ident: str) -> Allocation:
        """One allocation by UUID or name."""

    def list_allocations(
        self, *, resource_class: str | None = None,
        owner: str | None = None, expired: bool | None = None,
        now: datetime.datetime | None = None, group: str | None = None,
    ) -> Iterator[Allocation]:
        """Allocations, pages fetched lazily."""

    def update_allocation(
        self, ident: str, *, set_extra: Mapping[str, Any] | None = None,
    ) -> Allocation:
        """JSON patch of an allocation's extra."""

    def delete_allocation(
        self, ident: str, *, ignore_missing: bool = False,
        deadline: budget.Deadline | None = None,
    ) -> bool:
        """Delete an allocation; False if it did not exist."""

    def wait_for_allocation(
        self, allocation: Allocation | str, *,
        on_progress: waiting.ProgressCallback | None = None,
        deadline: budget.Deadline | None = None,
    ) -> Allocation:
        """Wait until it is ``active``."""

    def wait_for_allocations(
        self, allocations: Iterable[Allocation | str], *,
        on_progress: waiting.ProgressCallback | None = None,
        deadline: budget.Deadline | None = None,
    ) -> list[Allocation]:
        """Wait for many, one list request per poll round."""

    def get_node(
        self, ident: str, *, fields: Sequence[str] | None = None
    ) -> Node:
        """The read-only view of a node."""

    def undeploy_node(self, node: str) -> None:
        """Ask for a node's tear-down."""

    def supports_constraints(self) -> bool:
        """Whether the server evaluates constraints itself."""

    def supports_groups(self) -> bool:
        """Whether the server reserves a group in one transaction."""

    def supports_queue(self) -> bool:
        """Whether the server keeps allocations waiting in line."""
