"""``serve --expire-leases``: release what expired leases hold.

Every process started with the option runs :class:`LeaseExpiry`, a round
every ``interval`` seconds: it finds the candidates, then expires each in
its own transaction (:func:`expire_one`).

A lease lives in the allocation's ``lease_expires_at`` and
``lease_duration`` columns (the leases extension's ``lease`` field, see
``allocation/marks.py``; never in ``extra``).  Candidates are the settled
allocations whose end has passed, found through the column's index, a
page at a time in id order, reading only id and UUID.

:func:`expire_one` is the compare-and-set: one write transaction locks
the node, then the allocation (the one lock order, through
:func:`freeing.allocation_for_release`), decides again on what it has
locked, and releases through the one release path
(:func:`freeing.release_in_session`).  A renewal (a ``PATCH`` of
``lease``, which locks the allocation) is either committed before, and
then seen, or waits and finds the allocation gone.  Two processes
expiring the same allocation serialize on those locks: the second one
finds nothing to release, so each allocation is released exactly once.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections.abc import Iterator
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.exc import DBAPIError

from baremetal_allocclient import leases
from baremetal_allocclient.server.allocation import marks
from baremetal_allocclient.server.allocation.periodic import Periodic
from baremetal_allocclient.server.allocation.release import freeing, refusals
from baremetal_allocclient.server.allocation.states import ACTIVE, ERROR
from baremetal_allocclient.server.db.engine import (
    Database,
    is_lost_race,
    short_reason,
)
from baremetal_allocclient.server.db.models import Allocation, Node
from baremetal_allocclient.server.domain.recording import (
    DELETED,
    NOT_RECORDED,
    Change,
    Recorder,
)
from baremetal_allocclient.server.ironic import undeploy as undeploy_seam

LOG = logging.getLogger(__name__)

#: Allocations read per scanning query.
PAGE = 500

_SCAN = (
    select(Allocation.id, Allocation.uuid)
    .where(Allocation.id > bindparam("after"),
           Allocation.lease_expires_at <= bindparam("now"),
           Allocation.state.in_((ACTIVE, ERROR)))
    .order_by(Allocation.id)
    .limit(PAGE)
)


def expired_uuids(db: Database, now: datetime.datetime) -> Iterator[str]:
    """UUIDs of settled allocations whose lease ended by ``now``
    (unlocked reads; :func:`expire_one` decides again)."""
    after = 0
    while True:
        with db.read() as session:
            rows = session.connection().execute(
                _SCAN, {"after": after, "now": utc_naive(now)}).all()
        for row in rows:
            yield str(row.uuid)
        if len(rows) < PAGE:
            return
        after = rows[-1].id


@dataclasses.dataclass(frozen=True)
class Expired:
    """What :func:`expire_one` found and did."""

    action: str
    """A :class:`leases.Action`; ``release`` means it was released and
    ``undeploy`` that the tear-down was started."""
    allocation: str
    node: str | None = None
    node_id: int | None = None
    #: The allocation's owner and state when it expired.
    owner: str | None = None
    state: str | None = None
    expires_at: Any = None
    #: With ``undeploy``: the ``(state, target)`` the tear-down began in.
    began: tuple[str, str | None] | None = None


def expire_one(
    db: Database, uuid: str, now: datetime.datetime, *, undeploy: bool
) -> Expired | None:
    """Release (or start tearing down) one allocation if, under its
    locks, its lease has still ended; None when it is gone."""
    with db.write() as session:
        found_to_release = freeing.allocation_for_release(session, uuid,
                                                          True)
        if found_to_release is None:
            return None
        allocation = found_to_release.allocation
        node = None
        if allocation.node_id is not None:
            node = session.get(Node, allocation.node_id)
        facts = None if node is None else leases.NodeFacts(
            node.provision_state, node.target_provision_state)
        lease = marks.as_marks(allocation)
        action = leases.decide(allocation.state, lease, facts,
                               now, undeploy=undeploy)
        found = Expired(action, uuid, node.uuid if node else None,
                        allocation.node_id, owner=allocation.owner,
                        state=allocation.state,
                        expires_at=lease.get(leases.EXPIRES_KEY))
        if action == leases.Action.RELEASE:
            if node is not None and refusals.allocation_removal_error(
                    _view(node), uuid):
                return dataclasses.replace(found, action=leases.Action.BUSY)
            freeing.release_in_session(session, allocation)
        elif action == leases.Action.UNDEPLOY:
            assert node is not None
            began = undeploy_seam.start_undeploy(node, utc_naive(now))
            if began is None:
                return dataclasses.replace(found,
                                           action=leases.Action.DEPLOYED)
            return dataclasses.replace(found, began=began)
        return found


def _view(node: Node) -> refusals.NodeView:
    return refusals.NodeView(node.uuid, node.provision_state,
                            node.target_provision_state,
                            bool(node.maintenance))


def utc_naive(moment: datetime.datetime) -> datetime.datetime:
    """An aware time as the naive UTC the timestamp columns store."""
    return moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)


class LeaseExpiry:
    """Runs :meth:`run_once` every ``interval`` seconds in a thread."""

    def __init__(
        self,
        db: Database,
        hardware: undeploy_seam.Hardware,
        interval: float,
        *,
        undeploy: bool = False,
        recorder: Recorder = NOT_RECORDED,
    ) -> None:
        self._db = db
        self._hardware = hardware
        self._recorder = recorder
        self.interval = interval
        self.undeploy = undeploy
        self._periodic = Periodic("lease-expiry", interval, self.run_once,
                                  "Lease expiry round")
        #: Deployed allocations already reported (once per process).
        self._reported: set[str] = set()

    def start(self) -> None:
        """Start the periodic thread (no-op when the interval is 0)."""
        if self.interval <= 0:
            return
        LOG.info("Expiring leases every %g s (deployed nodes are %s)",
                 self.interval,
                 "undeployed" if self.undeploy else "reported and left")
        self._periodic.start()

    def stop(self) -> None:
        """Stop after the current round."""
        self._periodic.stop()

    def run_once(self, now: datetime.datetime | None = None
                 ) -> list[Expired]:
        """One round; returns what it released or started undeploying
        (and the deployed ones it left)."""
        moment = now or leases.utcnow()
        done: list[Expired] = []
        for uuid in list(expired_uuids(self._db, moment)):
            if self._periodic.stopping:
                break
            try:
                found = expire_one(self._db, uuid, moment,
                                   undeploy=self.undeploy)
            except DBAPIError as exc:
                if not is_lost_race(exc):
                    raise
                # Another process (on Galera, through another node)
                # changed the allocation or node first; the next round
                # looks at it again.
                LOG.info("Lease of allocation %s: lost a race, next "
                         "round: %s", uuid, short_reason(exc))
                continue
            if found is not None and self._report(found):
                self._count(found)
                done.append(found)
        return done

    def _count(self, found: Expired) -> None:
        """Count an expiry acted on (committed by expire_one)."""
        self._recorder.lease_expired(found.action)
        if found.action == leases.Action.RELEASE:
            self._recorder.released("lease_expiry")
            self._recorder.changed(Change(
                found.allocation, found.owner, found.state, DELETED,
                found.node, "lease_expiry"))

    def _report(self, found: Expired) -> bool:
        """Log what happened; True for an action, or a deployed node
        reported for the first time."""
        Action = leases.Action
        if found.action == Action.RELEASE:
            LOG.info("Lease of allocation %s expired at %s: released "
                     "node %s", found.allocation, found.expires_at,
                     found.node)
        elif found.action == Action.UNDEPLOY:
            LOG.info("Lease of allocation %s expired at %s: undeploying "
                     "node %s", found.allocation, found.expires_at,
                     found.node)
            state, target = found.began or (None, None)
            if found.node_id is not None and state and target:
                self._hardware.continue_provision(found.node_id, state,
                                                  target)
        elif found.action == Action.DEPLOYED:
            if found.allocation in self._reported:
                return False
            self._reported.add(found.allocation)
            LOG.warning(
                "Lease of allocation %s expired at %s but node %s is "
                "deployed: left in place (undeploy it, or serve with "
                "--expire-leases-undeploy)", found.allocation,
                found.expires_at, found.node)
        else:
            return False
        return True
