"""One allocation by identifier: read, update (JSON patch), delete; and a
node's allocation.  What a plain ``show`` or ``delete`` needs, nothing
more."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from baremetal_allocclient import exceptions, extension_names
from baremetal_allocclient.v1 import (
    marking,
    pagination,
    resources,
    transport,
    versions,
)
from baremetal_allocclient.v1.resources import Allocation

if TYPE_CHECKING:
    from baremetal_allocclient.v1 import budget
    from baremetal_allocclient.v1.protocol import Session


class _Unset:
    """Marker type for "argument not given" where ``None`` means remove."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


#: Default of ``update_allocation(name=...)``: leave the name unchanged.
UNSET: Final = _Unset()


def pointer(key: str) -> str:
    """Escape a key as one JSON pointer segment (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def fields_feature(
    fields: Sequence[str] | None, default: versions.Feature
) -> versions.Feature:
    """The feature a read needs: ``owner`` in ``fields`` needs 1.60."""
    if fields is not None and "owner" in fields:
        return versions.ALLOCATION_OWNER
    return default


def parse(session: Session, response: Any) -> Allocation:
    """The allocation in a response body."""
    return Allocation.from_wire(session._transport.json(response))


def get(
    session: Session,
    ident: str,
    deadline: budget.Deadline | None,
    fields: Sequence[str] | None = None,
) -> Allocation:
    """``GET /v1/allocations/<ident>``, opting into the known extensions."""
    names = resources.validate_fields(Allocation, fields)
    # After a create that waits in line, the answer says the place;
    # a known constraints extension adds the funnel to last_error.
    # The group and lease fields: ``Allocation.marks`` (v1/marking.py).
    opted_in = [*session._known_extensions(), *marking.READ_EXTENSIONS]
    if session._queue_used and names is None:
        opted_in.append(extension_names.QUEUE)
    headers = {extension_names.EXTENSION_HEADER: ", ".join(opted_in)}
    response = session._transport.request(
        "GET",
        "/v1/allocations/" + transport.quote(ident),
        feature=fields_feature(names, versions.ALLOCATIONS),
        params=pagination.build_query(
            {"fields": names}, limit=None, marker=None
        ),
        deadline=deadline, headers=headers,
    )
    return parse(session, response)


def update(
    session: Session,
    ident: str,
    *,
    name: str | _Unset | None = UNSET,
    set_extra: Mapping[str, Any] | None = None,
    unset_extra: Iterable[str] = (),
) -> Allocation:
    """``PATCH /v1/allocations/<ident>`` (API 1.57, JSON patch).  A
    lease set (or unset) in ``extra`` is the ``lease`` field on a server
    that has it (:func:`marking.lease_patch`)."""
    patch: list[dict[str, Any]] = []
    removed = resources.strings("unset_extra", unset_extra) or []
    set_extra, patch = marking.lease_patch(session, set_extra, removed) \
        if _has_lease(set_extra, removed) else (set_extra, [])
    headers = marking.READ_HEADER if patch else None
    if name is None:
        patch.append({"op": "remove", "path": "/name"})
    elif not isinstance(name, _Unset):
        patch.append({"op": "add", "path": "/name", "value": name})
    for key, value in (set_extra or {}).items():
        patch.append(
            {"op": "add", "path": "/extra/" + pointer(key),
             "value": value}
        )
    for key in removed:
        patch.append({"op": "remove", "path": "/extra/" + pointer(key)})
    if not patch:
        raise exceptions.InvalidArgument(
            "Nothing to update: give name, set_extra or unset_extra"
        )
    response = session._transport.request(
        "PATCH",
        "/v1/allocations/" + transport.quote(ident),
        feature=versions.ALLOCATION_UPDATE,
        json=patch, headers=headers,
    )
    return parse(session, response)


def _has_lease(set_extra: Mapping[str, Any] | None,
               unset_extra: list[str]) -> bool:
    """Whether a patch sets or unsets a lease."""
    from baremetal_allocclient import leases

    return leases.EXPIRES_KEY in (set_extra or {}) or (
        leases.EXPIRES_KEY in unset_extra)


def delete(
    session: Session,
    ident: str,
    *,
    ignore_missing: bool = False,
    deadline: budget.Deadline | None = None,
) -> bool:
    """``DELETE /v1/allocations/<ident>``; False if it did not exist."""
    return _delete(
        session, "/v1/allocations/" + transport.quote(ident),
        ignore_missing, deadline,
    )


def get_of_node(
    session: Session, node: str, *, fields: Sequence[str] | None = None
) -> Allocation:
    """``GET /v1/nodes/<node>/allocation``."""
    names = resources.validate_fields(Allocation, fields)
    response = session._transport.request(
        "GET",
        "/v1/nodes/" + transport.quote(node) + "/allocation",
        feature=fields_feature(names, versions.ALLOCATIONS),
        params=pagination.build_query(
            {"fields": names}, limit=None, marker=None
        ),
        headers=marking.READ_HEADER,
    )
    return parse(session, response)


def delete_of_node(
    session: Session, node: str, *, ignore_missing: bool = False
) -> bool:
    """``DELETE /v1/nodes/<node>/allocation``; False if there was none
    (with ``ignore_missing``)."""
    return _delete(
        session, "/v1/nodes/" + transport.quote(node) + "/allocation",
        ignore_missing,
    )


def _delete(
    session: Session,
    path: str,
    ignore_missing: bool,
    deadline: budget.Deadline | None = None,
) -> bool:
    """DELETE an allocation resource; a 404 is fine when asked."""
    try:
        session._transport.request(
            "DELETE", path, feature=versions.ALLOCATIONS,
            deadline=deadline,
        )
    except exceptions.NotFound:
        if not ignore_missing:
            raise
        return False
    return True
