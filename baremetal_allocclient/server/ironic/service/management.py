"""What fake-hardware's management interface fails at (virtual media,
boot mode, secure boot): the failure becomes the node's ``last_error``,
as when Ironic's conductor runs the request in the background."""

from __future__ import annotations

from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import utcnow
from baremetal_allocclient.server.db.node_lookup import visible_node
from baremetal_allocclient.server.domain.errors import Conflict, DomainError
from baremetal_allocclient.server.domain.policy import NodeScope
from baremetal_allocclient.server.ironic import interfaces

#: Ironic's UNSTABLE_STATES that this server's state machine has.
TRANSITIONING = (ns.DEPLOYING, ns.CLEANING, ns.VERIFYING, ns.DELETING,
                 ns.INSPECTING, ns.INSPECT_WAIT)


def fail_unsupported(db: Database, scope: NodeScope, ident: str,
                     template: str, action: str) -> None:
    """Record that the driver does not support ``action``: ``template``
    with the node's UUID (``{node}``) and why (``{exc}``)."""
    with db.write() as session:
        node = visible_node(session, scope, ident)
        node.last_error = template.format(
            node=node.uuid,
            exc=interfaces.unsupported_message(node.driver, action),
        )
        node.updated_at = utcnow()


def fail_boot_change(db: Database, scope: NodeScope, ident: str,
                     refusal: DomainError | None, last_error: str) -> None:
    """A boot mode or secure boot change: once the node is found,
    ``refusal`` (the request's, if any) is raised, then a 409 while the
    node is transitioning; else ``last_error`` is recorded."""
    with db.write() as session:
        node = visible_node(session, scope, ident)
        if refusal is not None:
            raise refusal
        if node.provision_state in TRANSITIONING:
            raise Conflict(
                f"Node is in {node.provision_state} state. Since node is "
                "transitioning, the boot mode will not be set as this may "
                "interfere with ongoing changes and result in erroneous "
                "modification. Try again later.")
        node.last_error = last_error
        node.updated_at = utcnow()
