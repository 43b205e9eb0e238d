"""Fake hardware: provision and power transitions that finish by themselves.

The API puts a node in the first state of a transition; this module walks
it through the remaining states after a short delay each, like Ironic's
fake-hardware driver.  Each step is a compare-and-set on the state the
step expects, so a node that changed meanwhile (deleted, maintenance
cleared, another request) is left alone.
"""

from __future__ import annotations

import datetime
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import select, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server.allocation.service import releasing
from baremetal_allocclient.server.db.engine import (
    CommitOutcomeUnknown,
    Database,
    is_transient,
    is_unavailable,
    short_reason,
)
from baremetal_allocclient.server.db.models import Node, utcnow
from baremetal_allocclient.server.domain.recording import (
    NOT_RECORDED,
    Recorder,
)
from baremetal_allocclient.server.ironic import vif_rows

LOG = logging.getLogger(__name__)

# Pause before retrying a step that lost a deadlock or the database.
RETRY_FIRST = 0.1
RETRY_MAX = 5.0


def begin(
    node: Node, transition: ns.Transition, now: datetime.datetime
) -> tuple[str, str | None]:
    """Put a (locked) node in the first state of ``transition``; return
    that ``(state, target)``, for :meth:`FakeHardware.continue_provision`
    once the transaction committed."""
    if transition.steps:
        state, target = transition.steps[0]
    else:
        state, target = transition.final, None
    node.provision_state = state
    node.target_provision_state = target
    node.provision_updated_at = now
    node.updated_at = now
    node.last_error = None
    return state, target


class FakeHardware:
    """Runs the delayed halves of provision and power requests."""

    def __init__(
        self, db: Database, step_delay: float = 0.05, workers: int = 8,
        recorder: Recorder = NOT_RECORDED,
    ) -> None:
        self._db = db
        #: Where the releases of an undeploy are counted.
        self.recorder = recorder
        self._delay = step_delay
        self._pool = ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="fake-hardware"
        )
        self._stopping = threading.Event()

    def shutdown(self) -> None:
        """Stop after the steps already running."""
        self._stopping.set()
        self._pool.shutdown(wait=True, cancel_futures=True)

    # -- provisioning --------------------------------------------------
    def continue_provision(
        self, node_id: int, state: str, target: str
    ) -> None:
        """Finish the transition a node in (state, target) is part of."""
        remaining = ns.remaining_steps(state, target)
        if remaining is None:
            return
        self._pool.submit(self._walk, node_id, state, remaining)

    def _walk(
        self,
        node_id: int,
        state: str,
        remaining: tuple[tuple[str, str | None], ...],
    ) -> None:
        current = state
        try:
            for next_state, next_target in remaining:
                if self._stopping.wait(self._delay):
                    return
                if not self._step_until_done(node_id, current, next_state,
                                             next_target):
                    return
                current = next_state
        except Exception:
            LOG.exception("Fake transition of node %s failed", node_id)

    def _step_until_done(
        self, node_id: int, current: str, new: str, target: str | None
    ) -> bool:
        """:meth:`_step`, tried again after a deadlock or while the
        database is unreachable, so a node is never left half-way (in
        ``deleting`` with its instance, say) by a lost race; False when
        the node changed meanwhile or the server is stopping."""
        pause = RETRY_FIRST
        while True:
            try:
                return self._step(node_id, current, new, target)
            except (DBAPIError, CommitOutcomeUnknown) as exc:
                if not (is_unavailable(exc) or (
                        isinstance(exc, DBAPIError) and is_transient(exc))):
                    raise
                LOG.warning("Step %s -> %s of node %s will be retried: %s",
                            current, new, node_id, short_reason(exc))
            if self._stopping.wait(pause):
                return False
            pause = min(pause * 2, RETRY_MAX)

    def _step(
        self, node_id: int, current: str, new: str, target: str | None
    ) -> bool:
        now = utcnow()
        with self._db.write() as session:
            node = session.scalars(
                select(Node)
                .where(Node.id == node_id, Node.provision_state == current)
                .with_for_update()
            ).first()
            if node is None:
                return False
            if current == ns.DELETING:
                # Tear down is complete: the instance, its allocation and
                # the VIFs go.
                self._release_instance(session, node)
            if current == ns.INSPECTING:  # as Ironic records a success
                node.inspection_finished_at = now
                node.inspection_started_at = None
            node.provision_state = new
            node.target_provision_state = target
            node.provision_updated_at = now
            node.updated_at = now
        return True

    def _release_instance(self, session: Session, node: Node) -> None:
        releasing.release_node(session, node, self.recorder, "undeploy")
        node.instance_uuid = None
        node.allocation_id = None
        node.instance_info = {}
        vif_rows.detach_vifs(session, node.id)

    # -- power -----------------------------------------------------------
    def finish_power(self, node_id: int, target: str) -> None:
        """Complete a power request after the step delay."""
        self._pool.submit(self._power, node_id, target)

    def _power(self, node_id: int, target: str) -> None:
        if self._stopping.wait(self._delay):
            return
        result = ns.power_result(target)
        now = utcnow()
        try:
            with self._db.write() as session:
                session.execute(
                    update(Node)
                    .where(
                        Node.id == node_id, Node.target_power_state == target
                    )
                    .values(
                        power_state=result,
                        target_power_state=None,
                        updated_at=now,
                    )
                )
        except Exception:
            LOG.exception("Fake power change of node %s failed", node_id)

    def resume(self) -> None:
        """Finish transitions interrupted by a restart."""
        with self._db.read() as session:
            rows = list(
                session.execute(
                    select(
                        Node.id,
                        Node.provision_state,
                        Node.target_provision_state,
                        Node.target_power_state,
                    ).where(
                        (Node.target_provision_state.is_not(None))
                        | (Node.target_power_state.is_not(None))
                    )
                )
            )
        for node_id, state, target, power_target in rows:
            if target is not None:
                self.continue_provision(node_id, state, target)
            if power_target is not None:
                self.finish_power(node_id, power_target)
