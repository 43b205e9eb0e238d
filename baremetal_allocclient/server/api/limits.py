"""Input limits checked before a handler runs.

Here: the body's size (:data:`MAX_BODY`, a 413 from
:meth:`.http.Request.body`, before reading when it is declared), JSON
nesting depth (``json.loads`` recurses and would raise
``RecursionError`` on a deep document), the query parameters each route
accepts (anything else is a 400, never silently ignored) and their length.
Field and list lengths live in :mod:`.schemas`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from baremetal_allocclient.server.api.errors import bad_request

#: The largest request body read (bytes); a longer one is a 413.
MAX_BODY = 1024 * 1024
MAX_JSON_DEPTH = 25
MAX_QUERY_VALUE = 4096
MAX_QUERY_PARAMS = 50
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")

_PAGING = ("fields", "limit", "marker", "sort_key", "sort_dir")
NODE_FILTERS = (
    "associated", "conductor_group", "driver", "fault", "instance_uuid",
    "lessee", "maintenance", "owner", "provision_state", "resource_class",
    "retired", "shard", "sharded", "parent_node", "include_children",
    "instance_name", "chassis_uuid", "conductor",
)
ALLOCATION_FILTERS = ("node", "owner", "resource_class", "state")
PORT_FILTERS = ("address", "node", "node_uuid")

#: Accepted query parameters per (route, method); routes as written in
#: the application's routing table (:mod:`.routing`).  Routes not listed
#: take none.
QUERY_PARAMS: dict[tuple[str, str], tuple[str, ...]] = {
    ("/v1/allocations", "GET"): (*ALLOCATION_FILTERS, *_PAGING),
    ("/v1/allocations/<ident>", "GET"): ("fields",),
    ("/v1/nodes", "GET"): (*NODE_FILTERS, *_PAGING, "detail"),
    ("/v1/nodes/detail", "GET"): (*NODE_FILTERS, *_PAGING),
    ("/v1/nodes/<ident>", "GET"): ("fields",),
    ("/v1/nodes/<ident>/allocation", "GET"): ("fields",),
    ("/v1/allocation_capacity", "GET"): ("resource_class", "constraints"),
    ("/v1/allocation_changes", "GET"): (*ALLOCATION_FILTERS, "name",
                                        "group", "uuid", "since"),
    ("/v1/ports", "GET"): (*PORT_FILTERS, *_PAGING, "detail"),
    ("/v1/ports/detail", "GET"): (*PORT_FILTERS, *_PAGING[1:]),
    ("/v1/ports/<ident>", "GET"): ("fields",),
    ("/v1/nodes/<ident>/ports", "GET"): ("address", *_PAGING, "detail"),
    ("/v1/nodes/<ident>/ports/detail", "GET"): ("address", *_PAGING[1:]),
    ("/v1/chassis", "GET"): (*_PAGING, "detail"),
    ("/v1/chassis/detail", "GET"): _PAGING[1:],
    ("/v1/chassis/<ident>", "GET"): ("fields",),
    ("/v1/chassis/<ident>/nodes", "GET"): (*NODE_FILTERS, *_PAGING,
                                           "detail"),
    ("/v1/chassis/<ident>/nodes/detail", "GET"): (*NODE_FILTERS,
                                                  *_PAGING),
}


def check_query(
    route: str, method: str, params: Iterable[tuple[str, str]]
) -> None:
    """400 for an unknown, repeated-too-often or oversized parameter."""
    # HEAD is answered by the GET route.
    allowed = QUERY_PARAMS.get(
        (route, "GET" if method == "HEAD" else method), ()
    )
    for count, (name, value) in enumerate(params, start=1):
        if count > MAX_QUERY_PARAMS:
            raise bad_request(
                f"Too many query parameters (at most {MAX_QUERY_PARAMS})"
            )
        if name not in allowed:
            accepted = ", ".join(sorted(allowed)) or "none"
            raise bad_request(
                f"Unknown query parameter {name[:100]!r} for {method} "
                f"{route.replace('<', '{').replace('>', '}')}; accepted: "
                f"{accepted}"
            )
        if len(value) > MAX_QUERY_VALUE:
            raise bad_request(
                f"Query parameter {name} is too long (at most "
                f"{MAX_QUERY_VALUE} characters)"
            )


def json_depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in a JSON text (pure).

    Does not parse: string contents (escapes included) are skipped, then
    only brackets are counted, so it is safe and linear on any input.  An
    unterminated string can only make the answer larger.
    """
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub(b"", raw)):
        if match.group() in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(depth - 1, 0)
    return deepest


def check_json_depth(raw: bytes) -> None:
    """400 when a body nests deeper than :data:`MAX_JSON_DEPTH`.  A body
    with no more opening brackets than that (in strings or not) cannot,
    and is not scanned."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_JSON_DEPTH:
        return
    if json_depth(raw) > MAX_JSON_DEPTH:
        raise bad_request(
            f"Request body JSON is nested too deeply (at most "
            f"{MAX_JSON_DEPTH} levels)"
        )
