"""The node calls the SDK makes: read one node, ask for its tear-down."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from baremetal_allocclient.v1 import pagination, resources, transport, versions
from baremetal_allocclient.v1.resources import Node

if TYPE_CHECKING:
    from baremetal_allocclient.v1.protocol import Session


def get(
    session: Session, ident: str, *, fields: Sequence[str] | None = None
) -> Node:
    """``GET /v1/nodes/<ident>``: the read-only view of a node."""
    names = resources.validate_fields(Node, fields)
    response = session._transport.request(
        "GET",
        "/v1/nodes/" + transport.quote(ident),
        feature=versions.NODES,
        params=pagination.build_query(
            {"fields": names}, limit=None, marker=None
        ),
    )
    return Node.from_wire(session._transport.json(response))


def undeploy(session: Session, node: str) -> None:
    """Provision target ``deleted``: the server deletes the node's
    allocation when the tear-down ends."""
    session._transport.request(
        "PUT", "/v1/nodes/" + transport.quote(node) + "/states/provision",
        feature=versions.NODES, json={"target": "deleted"},
    )
