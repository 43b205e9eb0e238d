"""``GET /v1/nodes``: its query parameters, checked against the request's
version in Ironic's order and wording, as
:class:`~baremetal_allocclient.server.ironic.node_listing.NodeFilters`
(no SQL here)."""

from __future__ import annotations

from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.api import listing, versions
from baremetal_allocclient.server.api.context import Context
from baremetal_allocclient.server.api.errors import (
    bad_request,
    not_acceptable,
)
from baremetal_allocclient.server.domain import identifiers
from baremetal_allocclient.server.ironic.node_listing import NodeFilters

#: The faults Ironic sets (``fault`` filter values).
VALID_FAULTS = ("power failure", "clean failure", "rescue abort failure",
                "service failure")
#: The ``conductor`` filter's version.
CONDUCTOR_FILTER = 49
#: Filters on one column: (query parameter and column, since minor).
_EQUAL = (
    ("resource_class", versions.RESOURCE_CLASS),
    ("owner", versions.OWNER_FILTER),
    ("lessee", versions.LESSEE),
    ("driver", 1),
    ("conductor_group", 46),
    ("fault", 42),
    ("instance_uuid", 1),
)


def _gate(ctx: Context, since: int, *values: object) -> None:
    """A filter newer than the request's version is a 406 (Ironic's
    wording)."""
    if ctx.minor < since and any(v is not None for v in values):
        raise not_acceptable(
            "Request not acceptable. The minimal required API version "
            f"should be 1.{since}")


def _equal(ctx: Context) -> list[tuple[str, str]]:
    found = []
    for name, since in _EQUAL:
        value = ctx.query(name)
        if value is None:
            continue
        _gate(ctx, since, value)
        if name == "fault" and value not in VALID_FAULTS:
            raise bad_request(
                f'Unrecognized fault "{value}" is specified, allowed '
                f"faults are {VALID_FAULTS}")
        if name == "instance_uuid":
            value = identifiers.canonical_uuid(value)
        found.append((name, value))
    return found


def _chassis(ctx: Context, path_chassis: str | None) -> str | None:
    """The chassis whose nodes are listed: the path's
    (``/v1/chassis/{uuid}/nodes``), else the ``chassis_uuid`` filter."""
    if path_chassis is not None:
        return path_chassis
    value = ctx.query("chassis_uuid")
    if value is not None and not identifiers.is_uuid_like(value):
        raise bad_request(f"Expected UUID for chassis_uuid: {value}")
    return None if value is None else identifiers.canonical_uuid(value)


def _managed_here(ctx: Context, conductor: str) -> bool:
    """Whether the ``conductor`` filter keeps any node: every node shows
    the conductor that answers (this process's name), so only that name
    selects them (Ironic: the conductor its hash ring gives the node)."""
    value = ctx.query("conductor")
    _gate(ctx, CONDUCTOR_FILTER, value)
    return value is None or value == conductor


def parse(ctx: Context, conductor: str,
          chassis_uuid: str | None = None) -> NodeFilters:
    """The request's filters; a 400 for a bad value, a 406 for a filter
    newer than its version.  Child nodes are listed only when asked
    for, at every version, as in Ironic.  ``chassis_uuid``: the
    chassis of the path, if any; ``conductor``: the name every node
    shows as its conductor."""
    state = ctx.query("provision_state")
    if state is not None and state not in ns.ALL_STATES:
        raise bad_request(f'Provision state "{state}" is not valid')
    maintenance = schemas.boolean("maintenance", ctx.query("maintenance"))
    retired = schemas.boolean("retired", ctx.query("retired"))
    associated = schemas.boolean("associated", ctx.query("associated"))
    equal = _equal(ctx)
    shard = ctx.query("shard")
    sharded = schemas.boolean("sharded", ctx.query("sharded"))
    _gate(ctx, versions.SHARDS, shard, sharded)
    parent = ctx.query("parent_node")
    children = schemas.boolean("include_children",
                                  ctx.query("include_children"))
    _gate(ctx, versions.PARENT_NODE, parent, children)
    instance_name = ctx.query("instance_name")
    if instance_name is not None and ctx.minor < versions.INSTANCE_NAME:
        raise not_acceptable(
            "instance_name is not acceptable in this API version")
    return NodeFilters(
        provision_state=state, maintenance=maintenance, retired=retired,
        associated=associated, equal=equal,
        shards=None if shard is None else listing.split_list(shard),
        sharded=sharded, instance_name=instance_name, parent_node=parent,
        include_children=bool(children),
        chassis_uuid=_chassis(ctx, chassis_uuid),
        managed_here=_managed_here(ctx, conductor))
