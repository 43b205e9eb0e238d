"""Releasing an allocation: the one function that frees a node
(``release_in_session``) and the locked reads before it.

Every function takes the caller's session and opens no transaction, so
callers combine a release with their own changes.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from sqlalchemy import (
    bindparam,
    delete,
    select,
    update,
)
from sqlalchemy.orm import Session

from baremetal_allocclient.server.allocation.release.refusals import NodeView
from baremetal_allocclient.server.db.lookups import (
    allocation_by_id,
    allocation_by_ident,
    locking,
)
from baremetal_allocclient.server.db.models import (
    Allocation,
    Node,
    utcnow,
)


def holder_of(session: Session, node: Node) -> Allocation | None:
    """The allocation holding ``node``, locked in a write.

    The caller has loaded (and in a write, locked) the node first: node,
    then allocation is the one lock order, and while the node is locked
    its ``allocation_id`` cannot change.
    """
    if node.allocation_id is None:
        return None
    return allocation_by_id(session, node.allocation_id)


class ToRelease(NamedTuple):
    """An allocation locked for release, and its node as the release
    rules read it (locked first; None: it holds no node)."""

    allocation: Allocation
    node: NodeView | None


def allocation_for_release(
    session: Session, ident: str, by_uuid: bool
) -> ToRelease | None:
    """An allocation by UUID or name with its node locked first, then
    itself (the one lock order), ready for :func:`release_in_session`;
    the node is read once, as it is locked.

    The node comes from an unlocked read.  If the allocation got a node
    in between (it was ``allocating``), that node is locked after it: the
    only way round the order, and rare; a deadlock it causes is reported
    by the database and the request runs again.
    """
    seen = allocation_by_ident(session, ident, by_uuid, lock=False)
    if seen is None:
        return None
    node_id = seen.node_id
    node = None if node_id is None else release_view(session, node_id)
    locked = allocation_by_id(session, seen.id)
    if locked is None:
        return None
    if locked.node_id != node_id:
        node = None if locked.node_id is None else release_view(
            session, locked.node_id)
    return ToRelease(locked, node)


_RELEASE_VIEW = select(
    Node.uuid, Node.provision_state, Node.target_provision_state,
    Node.maintenance,
).where(Node.id == bindparam("node_id"))
_RELEASE_VIEW_LOCKED = _RELEASE_VIEW.with_for_update()


def release_view(session: Session, node_id: int) -> NodeView | None:
    """What the release rules need of a node (locked in a write); the
    whole row is not loaded."""
    query = _RELEASE_VIEW_LOCKED if locking(session) else _RELEASE_VIEW
    row = session.connection().execute(query, {"node_id": node_id}).first()
    if row is None:
        return None
    return NodeView(row[0], row[1], row[2], bool(row[3]))


_ALLOCATED_NODE = (Node.id == bindparam("r_node"),
                   Node.allocation_id == bindparam("r_allocation"))
_ALLOCATED_NODE_INFO = select(Node.instance_info).where(*_ALLOCATED_NODE)
_FREE_NODE = (
    update(Node)
    .where(*_ALLOCATED_NODE)
    .values(allocation_id=None, instance_uuid=None,
            updated_at=bindparam("r_now"))
)
_FREE_NODE_AND_INFO = _FREE_NODE.values(
    instance_info=bindparam("r_info", type_=Node.instance_info.type)
)
_DELETE_ALLOCATION = delete(Allocation).where(
    Allocation.id == bindparam("r_allocation")
)


def release_in_session(session: Session, allocation: Allocation) -> None:
    """Delete an allocation and free its node, inside the caller's
    transaction (so callers can combine it with their own node change).

    The node keeps its ``instance_info`` but for the traits the
    allocation put there; a NULL one stays NULL.
    """
    session.flush()  # the caller's pending ORM changes go first
    conn = session.connection()
    params: dict[str, Any] = {"r_allocation": allocation.id,
                              "r_node": allocation.node_id,
                              "r_now": utcnow()}
    if allocation.node_id is not None:
        info = conn.scalar(_ALLOCATED_NODE_INFO, params)
        if info is None:
            conn.execute(_FREE_NODE, params)
        else:
            params["r_info"] = {k: v for k, v in info.items()
                                if k != "traits"}
            conn.execute(_FREE_NODE_AND_INFO, params)
    conn.execute(_DELETE_ALLOCATION, params)
