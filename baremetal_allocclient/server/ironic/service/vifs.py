"""The VIFs attached to a node: list, attach and detach them (the
wording of Ironic's network interfaces that store VIFs)."""

from __future__ import annotations

from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.node_lookup import visible_node
from baremetal_allocclient.server.domain.errors import Conflict, Invalid
from baremetal_allocclient.server.domain.policy import NodeScope
from baremetal_allocclient.server.ironic import vif_rows


def attached(db: Database, scope: NodeScope, ident: str) -> list[str]:
    """The node's VIFs, in the order they were attached."""
    with db.read() as session:
        node = visible_node(session, scope, ident)
        return vif_rows.vif_ids(session, node.id)


def attach(db: Database, scope: NodeScope, ident: str, vif: str) -> None:
    """Attach ``vif`` to the node (409 when it is attached already)."""
    with db.write() as session:
        node = visible_node(session, scope, ident)
        if vif in vif_rows.vif_ids(session, node.id):
            raise Conflict(f"Unable to attach VIF because VIF {vif} is "
                           f"already attached to Ironic node {node.uuid}")
        vif_rows.attach_vif(session, node.id, vif)


def detach(db: Database, scope: NodeScope, ident: str, vif: str) -> None:
    """Detach ``vif`` from the node (400 when it is not attached)."""
    with db.write() as session:
        node = visible_node(session, scope, ident)
        if not vif_rows.detach_vif(session, node.id, vif):
            raise Invalid(f"Unable to detach VIF {vif} from node "
                              f"{node.uuid} because it is not attached to "
                              f"it.")
