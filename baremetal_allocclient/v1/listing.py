"""Listing allocations: filters, the page loop, and the filters Ironic
cannot apply (``group``, ``expired``), applied here to every page.

Pages are fetched lazily, one ``GET /v1/allocations`` per page followed
through the server's ``next`` links
(see :mod:`~baremetal_allocclient.v1.pagination`).
"""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from baremetal_allocclient import exceptions
from baremetal_allocclient.v1 import (
    allocations,
    marking,
    pagination,
    resources,
    versions,
)
from baremetal_allocclient.v1.resources import Allocation

if TYPE_CHECKING:
    from baremetal_allocclient.v1 import budget
    from baremetal_allocclient.v1.protocol import Session


def list_allocations(
    session: Session,
    *,
    state: str | None = None,
    resource_class: str | None = None,
    node: str | None = None,
    owner: str | None = None,
    fields: Sequence[str] | None = None,
    limit: int | None = None,
    marker: str | None = None,
    sort_key: str | None = None,
    sort_dir: str | None = None,
    page_size: int | None = None,
    expired: bool | None = None,
    now: datetime.datetime | None = None,
    group: str | None = None,
) -> Iterator[Allocation]:
    """The work of :meth:`Client.list_allocations` (see there)."""
    if expired is not None:
        return _filter_expired(
            session, expired, now, limit,
            state=state, resource_class=resource_class, node=node,
            owner=owner, marker=marker, sort_key=sort_key,
            sort_dir=sort_dir, page_size=page_size, group=group,
            fields=None if fields is None else [*fields, "extra"],
        )
    pagination.check_positive("limit", limit)
    pagination.check_positive("page_size", page_size)
    _check_state_and_order(state, sort_dir)
    names = resources.validate_fields(Allocation, fields)
    feature = allocations.fields_feature(names, versions.ALLOCATIONS)
    if owner is not None:
        feature = versions.ALLOCATION_OWNER
    if group is not None and names is not None and "extra" not in names:
        names = (*names, "extra")
    filters = {
        "state": state,
        "resource_class": resource_class,
        "node": node,
        "owner": owner,
        "fields": names,
        "sort_key": sort_key,
        "sort_dir": sort_dir,
    }
    if group is None:
        return iterate(session, filters, feature, limit, marker, page_size)
    return _in_group(session, group, filters, feature, limit, marker,
                     page_size)


def _check_state_and_order(state: str | None, sort_dir: str | None) -> None:
    if state is not None and state not in resources.ALLOCATION_STATES:
        raise exceptions.InvalidArgument(
            f"state must be one of "
            f"{', '.join(resources.ALLOCATION_STATES)}, got {state!r}"
        )
    if sort_dir is not None and sort_dir not in ("asc", "desc"):
        raise exceptions.InvalidArgument(
            f"sort_dir must be 'asc' or 'desc', got {sort_dir!r}"
        )


def _in_group(
    session: Session, group: str, filters: Mapping[str, Any],
    feature: versions.Feature, limit: int | None, marker: str | None,
    page_size: int | None,
) -> Iterator[Allocation]:
    from baremetal_allocclient import groups

    members = (a for a in iterate(session, filters, feature, None, marker,
                                  page_size)
               if groups.group_of(a.marks) == group)
    return itertools.islice(members, limit)


def _filter_expired(
    session: Session, expired: bool, now: datetime.datetime | None,
    limit: int | None, **query: Any,
) -> Iterator[Allocation]:
    from baremetal_allocclient import leases

    pagination.check_positive("limit", limit)
    moment = now or leases.utcnow()
    listed = list_allocations(session, **query)
    chosen = (item for item in listed
              if leases.is_expired(item.marks, moment) == expired)
    return itertools.islice(chosen, limit)


def iterate(
    session: Session,
    filters: Mapping[str, Any],
    feature: versions.Feature,
    limit: int | None,
    marker: str | None,
    page_size: int | None,
    deadline: budget.Deadline | None = None,
) -> Iterator[Allocation]:
    """Yield allocations page by page, ``limit`` at most in total."""
    remaining = limit
    transport = session._transport
    while remaining is None or remaining > 0:
        params = pagination.build_query(
            filters,
            limit=pagination.page_limit(page_size, remaining),
            marker=marker,
        )
        response = transport.request(
            "GET", "/v1/allocations", feature=feature, params=params,
            deadline=deadline, headers=marking.READ_HEADER,
        )
        items, next_link = pagination.items_of(
            transport.json(response), "allocations"
        )
        for item in items:
            if remaining is not None:
                if remaining <= 0:
                    return
                remaining -= 1
            yield Allocation.from_wire(item)
        new_marker = pagination.marker_from_next(next_link)
        if not items or new_marker is None or new_marker == marker:
            return
        marker = new_marker
