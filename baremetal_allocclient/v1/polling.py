"""Waiting for allocations over HTTP: the requests behind
:mod:`~baremetal_allocclient.v1.waiting`'s loops (one ``GET`` per poll of
one allocation, one list request per round for many)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from baremetal_allocclient.v1 import (
    allocations,
    budget,
    listing,
    versions,
    waiting,
)
from baremetal_allocclient.v1.resources import Allocation

if TYPE_CHECKING:
    from baremetal_allocclient.v1.protocol import Session


def wait_for_allocation(
    session: Session,
    allocation: Allocation | str,
    *,
    timeout: float | None = waiting.DEFAULT_TIMEOUT,
    on_progress: waiting.ProgressCallback | None = None,
    deadline: budget.Deadline | None = None,
) -> Allocation:
    """The work of :meth:`Client.wait_for_allocation` (see there)."""
    deadline = deadline or session.deadline(timeout)
    if isinstance(allocation, Allocation):
        initial: Allocation | None = allocation
        ident = allocation.ident
    else:
        initial = None
        ident = allocation
    if initial is None or initial.state == waiting.ALLOCATING:
        from baremetal_allocclient.v1 import watching

        # Only where GET /v1 was read already (no request of its own: a
        # wait against real Ironic costs what it cost before).
        if watching.known_supported(session):
            try:
                return watching.wait_for_allocation(session, ident, initial,
                                                    deadline)
            except watching.NotOffered:
                pass  # polled below, within the same deadline
    return waiting.wait_for_allocation(
        lambda: allocations.get(session, ident, deadline),
        initial,
        on_progress=on_progress,
        clock=session._clock,
        sleep=session.sleep,
        deadline=deadline,
    )


def wait_for_allocations(
    session: Session,
    items: Iterable[Allocation | str],
    *,
    timeout: float | None = waiting.DEFAULT_TIMEOUT,
    raise_on_error: bool = True,
    on_progress: waiting.ProgressCallback | None = None,
    deadline: budget.Deadline | None = None,
) -> list[Allocation]:
    """The work of :meth:`Client.wait_for_allocations` (see there)."""
    deadline = deadline or session.deadline(timeout)
    known: list[Allocation] = []
    for item in items:
        if isinstance(item, Allocation) and item.uuid and item.state:
            known.append(item)
        else:
            ident = item.ident if isinstance(item, Allocation) else item
            known.append(allocations.get(session, ident, deadline))
    return waiting.wait_for_allocations(
        SessionSource(session, deadline),
        known,
        raise_on_error=raise_on_error,
        on_progress=on_progress,
        clock=session._clock,
        sleep=session.sleep,
        deadline=deadline,
    )


class SessionSource:
    """Adapts a session to :class:`waiting.AllocationSource`."""

    def __init__(self, session: Session, deadline: budget.Deadline) -> None:
        self._session = session
        self._deadline = deadline

    def get(self, uuid: str) -> Allocation:
        return allocations.get(self._session, uuid, self._deadline)

    def _list(self, **filters: Any) -> Iterator[Allocation]:
        return listing.iterate(
            self._session, filters, versions.ALLOCATIONS, None, None, None,
            self._deadline,
        )

    def allocating_uuids(self, resource_class: str | None) -> set[str]:
        return {
            str(item.uuid)
            for item in self._list(
                state=waiting.ALLOCATING,
                resource_class=resource_class,
                fields=["uuid"],
            )
        }

    def fetch_settled(
        self, allocations: Sequence[Allocation]
    ) -> list[Allocation]:
        """One list per resource class (newest first, stops early)."""
        groups: dict[str | None, set[str]] = {}
        for item in allocations:
            groups.setdefault(item.resource_class, set()).add(str(item.uuid))
        found: dict[str, Allocation] = {}
        for resource_class, wanted in groups.items():
            if len(wanted) > 1 and resource_class is not None:
                missing = set(wanted)
                for item in self._list(
                    resource_class=resource_class,
                    sort_key="created_at",
                    sort_dir="desc",
                ):
                    if item.uuid in missing:
                        found[item.uuid] = item
                        missing.discard(item.uuid)
                        if not missing:
                            break
                wanted = missing
            for uuid in wanted:
                found[uuid] = self.get(uuid)
        return [found[str(item.uuid)] for item in allocations]
