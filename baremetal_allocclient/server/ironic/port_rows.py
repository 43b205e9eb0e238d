"""Port rows: finding a port or the node a body names, uniqueness, one
page of a listing.  Every function takes the caller's session and opens
no transaction; in a write, nodes are locked before ports (the one lock
order)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from baremetal_allocclient.server.db import node_lookup, paging
from baremetal_allocclient.server.db.engine import WRITE
from baremetal_allocclient.server.db.models import Node, Port
from baremetal_allocclient.server.db.node_lookup import visible, visible_node
from baremetal_allocclient.server.domain import identifiers
from baremetal_allocclient.server.domain.errors import (
    Conflict,
    Invalid,
    NotFound,
)
from baremetal_allocclient.server.domain.paging import Page
from baremetal_allocclient.server.domain.policy import NodeScope
from baremetal_allocclient.server.domain.principal import Principal


def find_port(
    session: Session, who: Principal, ident: str
) -> tuple[Port, Node]:
    """A port by UUID with its node (locked in a write); 404 when missing
    or on a node the caller may not see.  Ports have no names below 1.88,
    so a name is never found; anything else is a 400, like Ironic."""
    canonical = identifiers.canonical_uuid(ident)
    if not identifiers.is_uuid_like(canonical):
        if not identifiers.is_valid_name(ident):
            raise Invalid(
                f"Expected UUID or name for port_ident: {ident}")
        raise NotFound(f"Port {ident} could not be found.")
    port = session.scalars(
        select(Port).where(Port.uuid == canonical)).first()
    node = None
    if port is not None:
        node = _locked(session, select(Node).where(Node.id == port.node_id))
    if port is None or node is None or not visible(who, node):
        raise NotFound(f"Port {ident} could not be found.")
    if session.info.get(WRITE):  # node, then port: the one lock order
        session.refresh(port, with_for_update=True)
    return port, node


def _locked(session: Session, query: Select[Any]) -> Node | None:
    """The first node of ``query``, locked when in a write."""
    if session.info.get(WRITE):
        query = query.with_for_update().execution_options(
            populate_existing=True)
    node: Node | None = session.scalars(query).first()
    return node


def node_for_port(session: Session, who: Principal, ident: str) -> Node:
    """The node a body names; missing (or hidden) is a 400."""
    ident = identifiers.canonical_uuid(ident)
    column = Node.uuid if identifiers.is_uuid_like(ident) else Node.name
    node = _locked(session, select(Node).where(column == ident))
    if node is None or not visible(who, node):
        raise Invalid(f"Node {ident} could not be found.")
    return node


def check_unique(
    session: Session, address: str, uuid: str | None, port_id: int | None
) -> None:
    taken = session.scalar(select(Port.id).where(
        Port.address == address, Port.id != (port_id or -1)))
    if taken is not None:
        raise Conflict(f"A port with MAC address {address} already exists.")
    if uuid is not None and session.scalar(
        select(Port.id).where(Port.uuid == uuid)
    ) is not None:
        raise Conflict(f"A port with UUID {uuid} already exists.")


def _filtered(session: Session, scope: NodeScope, node_ident: str | None,
              address: str | None) -> Any:
    query: Any = select(Port, Node.uuid).join(
        Node, Node.id == Port.node_id)
    shown = node_lookup.node_filter(scope.who)
    if shown is not None:
        query = query.where(shown)
    if node_ident is not None:
        node = visible_node(session, scope, node_ident)
        query = query.where(Port.node_id == node.id)
    if address is not None:
        mac = identifiers.normalize_mac(address)
        if mac is None:
            raise Invalid(
                f"Expected valid MAC address for address: {address}")
        query = query.where(Port.address == mac)
    return query


def _marker(
    session: Session, who: Principal, page: Page, ident: str | None
) -> tuple[Any, int] | None:
    if ident is None:
        return None
    if not identifiers.is_uuid_like(ident):
        raise Invalid(f"Expected UUID for marker: {ident}")
    port, _node = find_port(session, who, ident)
    return getattr(port, page.sort_key), port.id


def patched_node(session: Session, who: Principal, node_uuid: str) -> Node:
    """The node a patch moves a port to; a missing one is a 400."""
    try:
        return node_for_port(session, who, node_uuid)
    except Invalid:
        raise Invalid(
            f"Unable to apply the requested node_uuid '{node_uuid}'. "
            f"Requested value was invalid.") from None


def page_of_ports(
    session: Session, scope: NodeScope, page: Page,
    node_ident: str | None, address: str | None, marker: str | None,
) -> list[tuple[Port, str]]:
    """(port, its node's UUID) of one page: the ports of the node named
    (if any) with this MAC address (if any), after the ``marker`` port."""
    query = _filtered(session, scope, node_ident, address)
    after = _marker(session, scope.who, page, marker)
    query = paging.order_and_page(
        query, page, getattr(Port, page.sort_key), Port.id, after)
    return [(row[0], row[1]) for row in session.execute(query)]


def add_port(session: Session, port: Port) -> None:
    """Insert a new port now (a uniqueness violation raised here)."""
    session.add(port)
    session.flush()


def delete_port(session: Session, port: Port) -> None:
    """Delete a port (found, and locked, by :func:`find_port`)."""
    session.delete(port)
