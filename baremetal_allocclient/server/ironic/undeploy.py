"""The seam through which the allocation wing reaches the Ironic
stand-in: tearing down a node whose lease expired
(``serve --expire-leases --undeploy``), as
``PUT /v1/nodes/{node}/states/provision {"target": "deleted"}`` does.

Nothing else in ``server/allocation/`` imports ``server/ironic/``
(checked by ``tests/unit/server/test_layout.py``).
"""

from __future__ import annotations

import datetime
from typing import Protocol

from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server.db.models import Node
from baremetal_allocclient.server.ironic import fake_hardware


class Hardware(Protocol):
    """What finishes a tear-down once its transaction committed
    (:class:`~baremetal_allocclient.server.ironic.fake_hardware.
    FakeHardware`)."""

    def continue_provision(
        self, node_id: int, state: str, target: str
    ) -> None:
        """Finish the transition a node in (state, target) is part of."""


def start_undeploy(
    node: Node, now: datetime.datetime
) -> tuple[str, str | None] | None:
    """Start a locked node's tear-down; ``now`` is naive UTC.  Returns
    the ``(state, target)`` it is in, for :meth:`Hardware.
    continue_provision` after the commit; None when a tear-down is not
    allowed (protected, or a state with no tear-down)."""
    transition = ns.transition_for("deleted", node.provision_state)
    if transition is None or node.protected:
        return None
    return fake_hardware.begin(node, transition, now)
