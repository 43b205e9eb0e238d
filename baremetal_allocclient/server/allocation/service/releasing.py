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

from baremetal_allocclient.server.allocation import release, release_rules
from baremetal_allocclient.server.allocation.service import committing
from baremetal_allocclient.server.api.errors import conflict
from baremetal_allocclient.server.db.engine import (
    CommitOutcomeUnknown,
    Database,
)
from baremetal_allocclient.server.db.models import Allocation, Node


class Line(Protocol):
    """The rounds of the waiting line (``queueing.QueueRounds``)."""

    def wake(self) -> None:
        """Run a round now."""


def delete(db: Database, queue: Line | None,
           find: Callable[[Session], Allocation]) -> None:
    """Delete the allocation ``find`` locks, releasing its node (409 when
    the node's state keeps it); then allocations waiting in line here
    try at once (other processes see the node on their next round)."""
    # Read inside the transaction: a failed commit expires the object.
    found: list[tuple[int, str]] = []
    try:
        with db.write() as session:
            allocation = find(session)
            found.append((allocation.id, allocation.uuid))
            _delete(session, allocation)
    except CommitOutcomeUnknown as exc:
        committing.resolved(db, exc,
                            committing.stored(*found[0], present=False))
    if queue is not None:
        queue.wake()


def _delete(session: Session, allocation: Allocation) -> None:
    if allocation.node_id is not None:
        node = release.release_view(session, allocation.node_id)
        if node is not None:
            error = release_rules.allocation_removal_error(
                node, allocation.uuid)
            if error:
                raise conflict(error)
    release.release_in_session(session, allocation)


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
