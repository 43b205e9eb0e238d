"""Releasing an allocation's node: ``DELETE`` of an allocation, and the
Ironic wing's one way into the allocation wing (undeploy, ``PATCH`` of
``instance_uuid``, node deletion).

Every path that frees a node ends in
:func:`~baremetal_allocclient.server.allocation.release.
release_in_session`.  :func:`delete` opens its own transaction; the
other functions take the caller's session (the Ironic wing combines a
release with its own change of the node).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from sqlalchemy.orm import Session

from baremetal_allocclient.server.allocation import (
    lookup,
    release,
    release_rules,
)
from baremetal_allocclient.server.allocation.service import committing
from baremetal_allocclient.server.db.engine import (
    CommitOutcomeUnknown,
    Database,
)
from baremetal_allocclient.server.db.models import Allocation, Node
from baremetal_allocclient.server.db.node_lookup import visible_node
from baremetal_allocclient.server.domain import policy
from baremetal_allocclient.server.domain.errors import (
    Conflict,
    Invalid,
    NotFound,
)
from baremetal_allocclient.server.domain.principal import Principal


class Line(Protocol):
    """The rounds of the waiting line (``queueing.QueueRounds``)."""

    def wake(self) -> None:
        """Run a round now."""


def delete(db: Database, queue: Line | None, ident: str,
           who: Principal) -> None:
    """Delete the allocation ``ident`` names (as ``who`` may see it),
    releasing its node (:class:`Conflict` when the node's state keeps
    it); then allocations waiting in line here try at once (other
    processes see the node on their next round)."""
    _delete(db, queue, lambda session: lookup.allocation_to_release(
        session, ident, who))


def delete_node_allocation(db: Database, queue: Line | None,
                           scope: policy.NodeScope, node_ident: str) -> None:
    """Delete the allocation holding the node ``node_ident`` names, as
    :func:`delete` does."""
    _delete(db, queue, lambda session: node_allocation_to_release(
        session, scope, node_ident))


def node_allocation_to_release(session: Session, scope: policy.NodeScope,
                               node_ident: str) -> release.ToRelease:
    """The allocation of a node as ``scope`` may see it, locked after
    its node (:class:`Invalid` for a missing node, as in Ironic;
    :class:`NotFound` for a node without a visible allocation)."""
    try:
        node = visible_node(session, scope, node_ident)
    except NotFound as exc:
        raise Invalid(exc.message) from None
    allocation = release.holder_of(session, node)
    if allocation is None or not policy.allocation_visible(
            scope.who, allocation.owner):
        raise NotFound(f"Allocation for node {node_ident} was not found")
    return release.ToRelease(allocation, _view(node))


def _delete(db: Database, queue: Line | None,
            find: Callable[[Session], release.ToRelease]) -> None:
    # Read inside the transaction: a failed commit expires the object.
    found: list[tuple[int, str]] = []
    try:
        with db.write() as session:
            allocation, node = find(session)
            found.append((allocation.id, allocation.uuid))
            if node is not None:
                error = release_rules.allocation_removal_error(
                    node, allocation.uuid)
                if error:
                    raise Conflict(error)
            release.release_in_session(session, allocation)
    except CommitOutcomeUnknown as exc:
        committing.resolved(db, exc,
                            committing.stored(*found[0], present=False))
    if queue is not None:
        queue.wake()


# -- the Ironic wing's way in (the caller's session) --------------------
def holder_of(session: Session, node: Node) -> Allocation | None:
    """The allocation holding a node the caller locked, locked too."""
    return release.holder_of(session, node)


def release_in_session(session: Session, allocation: Allocation) -> None:
    """Delete ``allocation`` and free its node in the caller's
    transaction."""
    release.release_in_session(session, allocation)


def _view(node: Node) -> release_rules.NodeView:
    return release_rules.NodeView(
        node.uuid, node.provision_state, node.target_provision_state,
        node.maintenance,
    )


def instance_uuid_removal_refusal(node: Node) -> str | None:
    """Why a ``PATCH`` removing the ``instance_uuid`` of an allocated
    node is a 409 (None: allowed)."""
    return release_rules.instance_uuid_removal_error(_view(node))


def node_deletion_refusal(node: Node) -> str | None:
    """Why deleting the node (with its allocation) is a 409 (None:
    allowed)."""
    return release_rules.node_deletion_error(
        _view(node), node.instance_uuid, node.protected)
