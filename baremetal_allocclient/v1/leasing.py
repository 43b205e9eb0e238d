"""Expiring leases from the client: the work behind :meth:`Client.expire`.

Works the same against real Ironic and the reference server, with the
Allocation API only.  Each allocation whose lease looked expired in the
listing is handled on its own:

#. its node is read (is it deployed?),
#. the allocation is read again, right before acting, and compared with
   the listing: gone, moved to another node, or renewed meanwhile means
   hands off (a stale listing never releases a renewed lease),
#. the decision (:func:`baremetal_allocclient.leases.decide`) is taken on
   that fresh read, and the ``DELETE`` (or the undeploy) follows at once.

Two runs at the same time (two cron jobs) may both decide to release the
same allocation: one ``DELETE`` succeeds, the other finds it gone (404)
and reports nothing, so each allocation is released once and reported by
the run that released it.

What remains against Ironic, which has no conditional requests: a renewal
that reaches the server between the last read and the ``DELETE`` (one
round trip) is lost, and the renewing client finds the allocation gone.
Only a lease that had already ended can be in that window: a lease renewed
before it ends (by the clock of the machine running ``expire``) is never
released.  The reference server's own expiry (``serve --expire-leases``)
re-checks under the allocation's row lock and has no such window.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable
from typing import TYPE_CHECKING

from baremetal_allocclient import exceptions, leases
from baremetal_allocclient.v1.request import lease_duration
from baremetal_allocclient.v1.resources import Allocation

if TYPE_CHECKING:
    from baremetal_allocclient.v1.protocol import AllocationClient

Now = Callable[[], datetime.datetime]


class Outcome:
    """What :func:`expire` did with one allocation (string constants)."""

    RELEASED: str = "released"
    WOULD_RELEASE: str = "would release"
    UNDEPLOYING: str = "undeploying"
    WOULD_UNDEPLOY: str = "would undeploy"
    DEPLOYED: str = "deployed"
    #: Left for a later run: still allocating, or its node is busy.
    BUSY: str = "busy"
    #: Renewed, moved or released by someone else since the listing.
    CHANGED: str = "changed"
    FAILED: str = "failed"


#: Outcomes worth a line of output (``expire`` is quiet otherwise).
REPORTED: frozenset[str] = frozenset({
    Outcome.RELEASED, Outcome.WOULD_RELEASE, Outcome.UNDEPLOYING,
    Outcome.WOULD_UNDEPLOY, Outcome.DEPLOYED, Outcome.FAILED,
})


@dataclasses.dataclass(frozen=True)
class Expiry:
    """One allocation whose lease had ended, and what became of it."""

    allocation: Allocation
    outcome: str
    node: str | None = None
    expired_at: str | None = None
    reason: str | None = None

    def describe(self) -> str:
        """One line for people (and cron mails)."""
        who = self.allocation.uuid or "?"
        if self.allocation.name:
            who += f" ({self.allocation.name})"
        node = f" of node {self.node}" if self.node else ""
        since = f"; lease expired at {self.expired_at}"
        text = {
            Outcome.RELEASED: f"Released allocation {who}{node}{since}",
            Outcome.WOULD_RELEASE:
                f"Would release allocation {who}{node}{since}",
            Outcome.UNDEPLOYING:
                f"Undeploying node {self.node} of allocation {who}{since}; "
                "the allocation goes when the tear-down ends",
            Outcome.WOULD_UNDEPLOY:
                f"Would undeploy node {self.node} of allocation {who}{since}",
            Outcome.DEPLOYED:
                f"Left allocation {who}{node}: the node is deployed{since} "
                "(undeploy it, or expire with --undeploy)",
            Outcome.FAILED:
                f"Could not expire allocation {who}{node}: {self.reason}",
        }
        return text.get(self.outcome, f"{self.outcome}: {who}{node}")


@dataclasses.dataclass
class ExpireReport:
    """Everything :func:`expire` looked at, in listing order."""

    entries: list[Expiry] = dataclasses.field(default_factory=list)

    def of(self, outcome: str) -> list[Expiry]:
        """The entries with this outcome."""
        return [entry for entry in self.entries if entry.outcome == outcome]

    @property
    def failed(self) -> list[Expiry]:
        """The entries that could not be handled."""
        return self.of(Outcome.FAILED)

    @property
    def reported(self) -> list[Expiry]:
        """The entries worth a line of output."""
        return [e for e in self.entries if e.outcome in REPORTED]


def expire(
    client: AllocationClient,
    *,
    dry_run: bool = False,
    undeploy: bool = False,
    resource_class: str | None = None,
    owner: str | None = None,
    now: Now = leases.utcnow,
) -> ExpireReport:
    """Release (or, with ``undeploy``, tear down) what expired leases hold.

    See the module documentation for the guarantees.  Failures do not stop
    the run: each is an entry with outcome ``failed``.
    """
    report = ExpireReport()
    listed = list(client.list_allocations(
        resource_class=resource_class, owner=owner, expired=True,
        now=now()))
    for seen in listed:
        try:
            entry = _expire_one(client, seen, dry_run, undeploy, now)
        except exceptions.ClientError as exc:
            entry = Expiry(seen, Outcome.FAILED, seen.node_uuid,
                           _expiry_text(seen), str(exc))
        report.entries.append(entry)
    return report


def _expiry_text(allocation: Allocation) -> str | None:
    value = allocation.marks.get(leases.EXPIRES_KEY)
    return None if value is None else str(value)


def _node_facts(client: AllocationClient,
                node: str | None) -> leases.NodeFacts | None:
    if node is None:
        return None
    try:
        found = client.get_node(
            node, fields=["uuid", "provision_state",
                          "target_provision_state"])
    except exceptions.NotFound:
        return None
    return leases.NodeFacts(found.provision_state,
                            found.target_provision_state)


def _expire_one(
    client: AllocationClient, seen: Allocation, dry_run: bool, undeploy: bool,
    now: Now,
) -> Expiry:
    """Re-read, compare, decide and act on one listed allocation."""
    node = _node_facts(client, seen.node_uuid)
    try:
        fresh = client.get_allocation(str(seen.uuid))
    except exceptions.NotFound:
        return Expiry(seen, Outcome.CHANGED, seen.node_uuid,
                      _expiry_text(seen), "released by someone else")
    if fresh.node_uuid != seen.node_uuid:
        return Expiry(fresh, Outcome.CHANGED, fresh.node_uuid,
                      _expiry_text(fresh), "its node changed")
    action = leases.decide(fresh.state, fresh.marks, node, now(),
                           undeploy=undeploy)
    entry = Expiry(fresh, Outcome.CHANGED, fresh.node_uuid,
                   _expiry_text(fresh), "lease renewed")
    if action == leases.Action.RELEASE:
        if dry_run:
            return dataclasses.replace(entry, outcome=Outcome.WOULD_RELEASE)
        if client.delete_allocation(str(fresh.uuid), ignore_missing=True):
            return dataclasses.replace(entry, outcome=Outcome.RELEASED)
        return dataclasses.replace(entry, reason="released by someone else")
    if action == leases.Action.UNDEPLOY:
        if dry_run:
            return dataclasses.replace(entry, outcome=Outcome.WOULD_UNDEPLOY)
        client.undeploy_node(str(fresh.node_uuid))
        return dataclasses.replace(entry, outcome=Outcome.UNDEPLOYING)
    if action == leases.Action.DEPLOYED:
        return dataclasses.replace(entry, outcome=Outcome.DEPLOYED)
    if action == leases.Action.BUSY:
        return dataclasses.replace(entry, outcome=Outcome.BUSY)
    return entry


def renew_lease(
    client: AllocationClient, allocation: Allocation | str,
    lease: datetime.timedelta | str,
) -> Allocation:
    """The work of :meth:`Client.renew_lease` (see there)."""
    ident = allocation.ident if isinstance(
        allocation, Allocation) else allocation
    return client.update_allocation(ident, set_extra=leases.lease_extra(
        lease_duration(lease), leases.utcnow()))
