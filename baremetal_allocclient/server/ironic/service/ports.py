"""Ports: list, find, create, change and delete them.

Each function opens its own transaction and returns ports with their
node's UUID; in a write, the node is locked before its port (the one
lock order, :mod:`~baremetal_allocclient.server.ironic.port_rows`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.db.engine import (
    Database,
    duplicates_refused,
)
from baremetal_allocclient.server.db.models import Node, Port, utcnow
from baremetal_allocclient.server.domain import patching
from baremetal_allocclient.server.domain.errors import Conflict, Invalid
from baremetal_allocclient.server.domain.paging import Page
from baremetal_allocclient.server.domain.policy import NodeScope
from baremetal_allocclient.server.ironic import port_rows, port_rules

Shown = tuple[Port, str]  # a port and its node's UUID


@dataclass(frozen=True)
class Listing:
    """What a port list asks for (None: not filtered on)."""

    page: Page
    #: The node whose ports are listed (a UUID or, by version, a name).
    node: str | None
    address: str | None
    marker: str | None


def list_page(db: Database, scope: NodeScope, asked: Listing
              ) -> list[Shown]:
    """One page of the ports the caller may see (404 for a missing
    node, 400 for a malformed address or marker)."""
    with db.read() as session:
        return port_rows.page_of_ports(session, scope, asked.page,
                                       asked.node, asked.address,
                                       asked.marker)


def show(db: Database, scope: NodeScope, ident: str) -> Shown:
    """The port ``ident`` names (404 when missing or hidden)."""
    with db.read() as session:
        port, node = port_rows.find_port(session, scope.who, ident)
        return port, node.uuid


def create(db: Database, scope: NodeScope, values: dict[str, Any],
           uuid: str) -> Shown:
    """Store a port with the checked body ``values`` on the node it
    names (400 when missing or hidden); 409 when its MAC address or
    ``uuid`` is taken."""
    def duplicate() -> Conflict:  # a race lost to another create
        return Conflict(
            f"A port with MAC address {values['address']} or UUID {uuid} "
            f"already exists.")

    with duplicates_refused(duplicate), db.write() as session:
        node = port_rows.node_for_port(
            session, scope.who,
            values.get("node_uuid") or values["node_ident"])
        port_rows.check_unique(session, values["address"], uuid, None)
        port = Port(
            uuid=uuid, address=values["address"], node_id=node.id,
            internal_info={}, created_at=utcnow(),
            **{k: port_rules.value(values, k) for k in port_rules.DEFAULTS},
        )
        port_rows.add_port(session, port)
        return port, node.uuid


def _patched(port: Port, node: Node, patch: list[dict[str, Any]]
             ) -> tuple[dict[str, Any], set[str]]:
    """The port's fields after ``patch`` (checked and normalised; no
    ``node_uuid``: its node's) and the fields it changes (not the
    node)."""
    before = port_rules.patchable(port, node)
    after = patching.apply(before, patch)
    if not isinstance(after, dict):
        raise Invalid("Invalid patch: the port must stay an object")
    after = {k: v for k, v in after.items() if v is not None}
    after.setdefault("node_uuid", node.uuid)  # removing it: no change
    # Only the patched fields were checked against the version.
    schemas.validate(after, schemas.PORT, "Schema error for patch")
    after = port_rules.normalized(after)
    port_rules.check_no_portgroup(after)
    changed = {k for k in port_rules.DEFAULTS
               if port_rules.value(after, k) != before[k]}
    if after["address"] != port.address:
        changed.add("address")
    return after, changed


def update(db: Database, scope: NodeScope, ident: str,
           patch: list[dict[str, Any]]) -> Shown:
    """Apply a JSON patch (its paths checked by the caller) with
    Ironic's rules: the node's state, a MAC address not taken, a node
    to move to that exists."""
    with db.write() as session:
        port, node = port_rows.find_port(session, scope.who, ident)
        after, changed = _patched(port, node, patch)
        target = node
        if after["node_uuid"] != node.uuid:
            target = port_rows.patched_node(session, scope.who,
                                            after["node_uuid"])
        port_rules.check_update_allowed(port, target, changed)
        if "address" in changed:
            port_rows.check_unique(session, after["address"], None, port.id)
            port.address = after["address"]
        for key in changed - {"address"}:
            setattr(port, key, port_rules.value(after, key))
        port.node_id = target.id
        port.updated_at = utcnow()
        session.flush()
        return port, target.uuid


def delete(db: Database, scope: NodeScope, ident: str) -> None:
    """Delete the port ``ident`` names (404 when missing or hidden)."""
    with db.write() as session:
        port, _node = port_rows.find_port(session, scope.who, ident)
        port_rows.delete_port(session, port)
