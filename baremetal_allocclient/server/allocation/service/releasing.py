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

from baremetal_allocclient.server.allocation import lookup
from baremetal_allocclient.server.allocation.release import freeing, refusals
from baremetal_allocclient.server.allocation.release.refusals import Holder
from baremetal_allocclient.server.allocation.service import committing
from baremetal_allocclient.server.db.commit_hooks import on_commit
from baremetal_allocclient.server.db.engine import (
    CommitOutcomeUnknown,
    Database,
)
from baremetal_allocclient.server.db.models import Allocation, Node
from baremetal_allocclient.server.domain import policy
from baremetal_allocclient.server.domain.errors import (
    Conflict,
)
from baremetal_allocclient.server.domain.principal import Principal
from baremetal_allocclient.server.domain.recording import (
    DELETED,
    NOT_RECORDED,
    Change,
    Recorder,
)


class Line(Protocol):
    """The rounds of the waiting line (``queueing.QueueRounds``)."""

    def wake(self) -> None:
        """Run a round now."""


def delete(db: Database, queue: Line | None, ident: str,
           who: Principal, recorder: Recorder = NOT_RECORDED,
           holder: Holder | None = None) -> None:
    """Delete the allocation ``ident`` names (as ``who`` may see it),
    releasing its node (:class:`Conflict` when the node's state keeps
    it); then allocations waiting in line here try at once (other
    processes see the node on their next round)."""
    gone = _delete(db, queue, lambda session: lookup.allocation_to_release(
        session, ident, who), holder)
    recorder.released("api")
    recorder.changed(gone)


def delete_node_allocation(db: Database, queue: Line | None,
                           scope: policy.NodeScope, node_ident: str,
                           recorder: Recorder = NOT_RECORDED,
                           holder: Holder | None = None) -> None:
    """Delete the allocation holding the node ``node_ident`` names, as
    :func:`delete` does."""
    gone = _delete(db, queue, lambda session: node_allocation_to_release(
        session, scope, node_ident), holder)
    recorder.released("node_api")
    recorder.changed(gone)


def node_allocation_to_release(session: Session, scope: policy.NodeScope,
                               node_ident: str) -> freeing.ToRelease:
    """The allocation of a node as ``scope`` may see it, locked after
    its node (:func:`.lookup.node_and_allocation`), ready to be
    released."""
    node, allocation = lookup.node_and_allocation(session, scope, node_ident)
    return freeing.ToRelease(allocation, _view(node))


def _delete(db: Database, queue: Line | None,
            find: Callable[[Session], freeing.ToRelease],
            holder: Holder | None) -> Change:
    """The deletion ``find`` locks, committed; what changed.  The
    release rules are the server's own, or the ``holder``'s: asked
    first, outside the transaction (no write lock is held while it
    answers); once it has freed the node there, the server's rows only
    follow, and a node it freed but the server still shows held is
    never given by either."""
    if holder is not None:
        with db.read() as session:
            seen, seen_node = find(session)
            uuid, holds_node = seen.uuid, seen_node is not None
        holder.release(uuid, holds_node)
    # Read inside the transaction: a failed commit expires the object.
    found: list[tuple[int, str]] = []
    gone: list[Change] = []
    try:
        with db.write() as session:
            allocation, node = find(session)
            found.append((allocation.id, allocation.uuid))
            gone.append(_deleted(allocation, None if node is None
                                 else node.uuid, "request"))
            if holder is None and node is not None:
                error = refusals.allocation_removal_error(
                    node, allocation.uuid)
                if error:
                    raise Conflict(error)
            freeing.release_in_session(session, allocation)
    except CommitOutcomeUnknown as exc:
        committing.resolved(db, exc,
                            committing.stored(*found[0], present=False))
    if queue is not None:
        queue.wake()
    return gone[0]


def _deleted(allocation: Allocation, node_uuid: str | None,
             actor: str) -> Change:
    return Change(allocation.uuid, allocation.owner, allocation.state,
                  DELETED, node_uuid, actor)


# -- the Ironic wing's way in (the caller's session) --------------------
def release_node(session: Session, node: Node, recorder: Recorder,
                 path: str) -> bool:
    """Delete the allocation holding ``node`` (locked by the caller), if
    any, freeing the node in the caller's transaction (the node is read
    again; the release is counted under ``path`` once committed);
    whether there was one."""
    allocation = freeing.holder_of(session, node)
    if allocation is None:
        return False
    gone = _deleted(allocation, node.uuid, path)
    freeing.release_in_session(session, allocation)
    on_commit(session, lambda: _report(recorder, path, gone))
    session.refresh(node)
    return True


def release_for_instance_uuid(session: Session, node: Node,
                              new: str | None, recorder: Recorder) -> bool:
    """A ``PATCH`` of the ``instance_uuid`` of ``node`` (locked by the
    caller) to ``new``: when an allocation holds the node, removing the
    UUID releases it (:class:`Conflict` when the node's state keeps it)
    and setting another is a conflict, Ironic's "is associated".
    Whether an allocation held it (the change is then done)."""
    allocation = freeing.holder_of(session, node)
    if allocation is None:
        return False
    if new is not None:
        raise Conflict(f"Node {node.uuid} is associated with instance "
                       f"{node.instance_uuid or allocation.uuid}.")
    error = refusals.instance_uuid_removal_error(_view(node))
    if error:
        raise Conflict(error)
    gone = _deleted(allocation, node.uuid, "instance_uuid")
    freeing.release_in_session(session, allocation)
    on_commit(session, lambda: _report(recorder, "instance_uuid", gone))
    session.refresh(node)
    return True


def _report(recorder: Recorder, path: str, gone: Change) -> None:
    recorder.released(path)
    recorder.changed(gone)


def _view(node: Node) -> refusals.NodeView:
    return refusals.NodeView(
        node.uuid, node.provision_state, node.target_provision_state,
        node.maintenance,
    )


def node_deletion_refusal(node: Node) -> str | None:
    """Why deleting the node (with its allocation) is a 409 (None:
    allowed)."""
    return refusals.node_deletion_error(_view(node), node.instance_uuid)
