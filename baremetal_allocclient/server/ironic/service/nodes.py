"""Nodes: find, list, create, change and delete them, count the shards.

Each function opens its own transaction; the nodes it returns come with
what their views show from other rows (:class:`~baremetal_allocclient.
server.ironic.node_rows.Related`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.allocation.service import releasing
from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.engine import (
    Database,
    duplicates_refused,
)
from baremetal_allocclient.server.db.models import Node, utcnow
from baremetal_allocclient.server.db.node_lookup import visible_node
from baremetal_allocclient.server.domain import patching
from baremetal_allocclient.server.domain.errors import (
    Conflict,
    Forbidden,
    Invalid,
)
from baremetal_allocclient.server.domain.paging import Page
from baremetal_allocclient.server.domain.policy import NodeScope
from baremetal_allocclient.server.domain.recording import (
    NOT_RECORDED,
    Recorder,
)
from baremetal_allocclient.server.ironic import (
    chassis_rows,
    node_changes,
    node_listing,
    node_rows,
)
from baremetal_allocclient.server.ironic.node_listing import NodeFilters
from baremetal_allocclient.server.ironic.service import provisioning

Shown = tuple[Node, node_rows.Related]


def find(db: Database, scope: NodeScope, ident: str) -> Node:
    """The node ``ident`` names (404 when missing or hidden)."""
    with db.read() as session:
        return visible_node(session, scope, ident)


def show(db: Database, scope: NodeScope, ident: str) -> Shown:
    """The node ``ident`` names, with its traits and allocation."""
    with db.read() as session:
        node = visible_node(session, scope, ident)
        return node, node_rows.related(session, [node])


def list_page(db: Database, scope: NodeScope, filters: NodeFilters,
              page: Page, marker: str | None
              ) -> tuple[list[Node], node_rows.Related]:
    """One page of the nodes the caller may see that ``filters`` select,
    after the ``marker`` node (404 when missing or hidden)."""
    with db.read() as session:
        if filters.chassis_uuid is not None:  # 404 when missing
            chassis_rows.find_chassis(session, filters.chassis_uuid)
        nodes = node_listing.page_of_nodes(session, scope.who, filters,
                                           page, marker)
        return nodes, node_rows.related(session, nodes)


def create(db: Database, columns: dict[str, Any],
           parent_ident: str | None, chassis_ident: str | None = None
           ) -> Shown:
    """Store a node with ``columns`` (its ``uuid`` and ``name`` not
    taken: 409), the parent ``parent_ident`` names (400 unless a node
    of the same owner) and the chassis ``chassis_ident`` names (400 when
    missing)."""
    uuid, name = columns["uuid"], columns.get("name")
    instance_uuid = columns.get("instance_uuid")

    def duplicate() -> Conflict:  # a race lost to another create
        return Conflict(f"A node with UUID {uuid}, name {name} or instance "
                        f"{instance_uuid} already exists.")

    with duplicates_refused(duplicate), db.write() as session:
        if lookups.node_by_ident(session, uuid, True, lock=False):
            raise Conflict(f"A node with UUID {uuid} already exists.")
        if name is not None and lookups.node_by_ident(
            session, name, False, lock=False
        ):
            raise Conflict(f"A node with name {name} already exists.")
        parent = node_changes.parent_uuid(session, columns.get("owner"),
                                          parent_ident)
        chassis = chassis_rows.chassis_of_node(session, chassis_ident)
        node = Node(**columns, parent_node=parent, chassis_uuid=chassis)
        node_rows.add_node(session, node)
        return node, node_rows.related(session, [node])


def _patched(node: Node, patch: list[dict[str, Any]],
             schema: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """The node's fields after ``patch`` (removed ones back to their
    defaults, checked against ``schema``) and the fields it changes."""
    before = node_changes.patchable(node)
    after = patching.apply(before, patch)
    if not isinstance(after, dict):
        raise Invalid("Invalid patch: the node must stay an object")
    after = node_changes.with_defaults(after)
    schemas.validate(after, schema, "Schema error for patch")
    after = schemas.node_booleans(after)
    changed = {k for k in node_changes.PATCHABLE
               if after.get(k) != before.get(k)}
    return after, changed


def update(db: Database, scope: NodeScope, ident: str,
           patch: list[dict[str, Any]], schema: dict[str, Any],
           recorder: Recorder = NOT_RECORDED) -> Shown:
    """Apply a JSON patch (its paths checked by the caller; the result
    checked against ``schema``, the request version's) with Ironic's
    rules for each field."""
    with db.write() as session:
        node = visible_node(session, scope, ident)
        after, changed = _patched(node, patch, schema)
        node_changes.apply_changes(session, ident, node, after, changed,
                                   recorder)
        node.updated_at = utcnow()
        session.flush()
        return node, node_rows.related(session, [node])


def delete(db: Database, scope: NodeScope, ident: str,
           recorder: Recorder = NOT_RECORDED) -> None:
    """Delete a node with its ports and VIFs, releasing its allocation
    (403 when it is protected, 409 when its state keeps it)."""
    with db.write() as session:
        node = visible_node(session, scope, ident)
        if node.protected:
            raise Forbidden(provisioning.protected_message(node.uuid))
        error = releasing.node_deletion_refusal(node)
        if error:
            raise Conflict(error)
        releasing.release_node(session, node, recorder, "node_delete")
        node_rows.delete_node(session, node)


def shard_counts(db: Database) -> Sequence[tuple[int, str]]:
    """(node count, shard) for every shard, the largest first; nodes
    without a shard count as shard "None"."""
    with db.read() as session:
        return sorted(node_rows.shard_counts(session),
                      key=lambda row: row[0], reverse=True)
