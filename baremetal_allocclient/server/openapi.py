"""The OpenAPI 3.1 description of the served API.

Built from the very schemas the handlers validate with
(:mod:`.api.schemas`, at the maximum microversion) and the query
parameters the server accepts (:mod:`.api.limits`), so it cannot drift
from what is enforced.  It describes both wings, so it is wiring, beside
``app.py``.  The copy kept in the repository (``doc/source/openapi.json``)
is regenerated with::

    python -m baremetal_allocclient.server.openapi \
        > doc/source/openapi.json

and a unit test fails when it differs from :func:`document`.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.api import limits, versions
from baremetal_allocclient.server.api.http import Response
from baremetal_allocclient.server.ironic.handlers import boot_mode
from baremetal_allocclient.server.ironic.views import (
    CHASSIS_FIELDS,
    PORT_FIELDS,
)

_LATEST = versions.MAX_VERSION
_ERROR_REF = {"$ref": "#/components/responses/Error"}


@dataclass(frozen=True)
class Operation:
    """One route of the API as documented."""

    path: str  # ``<name>`` segments, as in the routing table
    method: str
    operation_id: str
    summary: str
    status: int
    body: Callable[[], dict[str, Any]] | None = None
    result: str | None = None  # a components/schemas name
    headers: tuple[str, ...] = ()  # components/parameters names
    #: The success's media type (when ``result`` names no schema).
    media: str = "application/json"


def _allocation_create() -> dict[str, Any]:
    return schemas.allocation_create(_LATEST)


def _allocation_explain() -> dict[str, Any]:
    return schemas.allocation_create(_LATEST, extended=True)


def _allocation_group() -> dict[str, Any]:
    return schemas.allocation_group(_LATEST)


def _node_create() -> dict[str, Any]:
    return schemas.node_create(_LATEST)


def _fixed(schema: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    return lambda: schema


_PATCH = _fixed(schemas.JSON_PATCH)

OPERATIONS: tuple[Operation, ...] = (
    Operation("/v1/allocations", "GET", "listAllocations",
              "List allocations (members: their project's only)", 200,
              result="AllocationList"),
    Operation("/v1/allocations", "POST", "createAllocation",
              "Create an allocation; a worker reserves a node", 201,
              _allocation_create, "Allocation", headers=("Prefer",)),
    Operation("/v1/allocations/<ident>", "GET", "getAllocation",
              "Show an allocation by UUID or name", 200,
              result="Allocation"),
    Operation("/v1/allocations/<ident>", "PATCH", "updateAllocation",
              "Update name and extra (JSON patch)", 200, _PATCH,
              "Allocation"),
    Operation("/v1/allocations/<ident>", "DELETE", "deleteAllocation",
              "Delete an allocation and release its node", 204),
    Operation("/v1/chassis", "GET", "listChassis",
              "List chassis (admin)", 200, result="ChassisList"),
    Operation("/v1/chassis", "POST", "createChassis",
              "Create a chassis (admin)", 201, _fixed(schemas.CHASSIS),
              "Chassis"),
    Operation("/v1/chassis/detail", "GET", "listChassisDetail",
              "List chassis with every field (admin)", 200,
              result="ChassisList"),
    Operation("/v1/chassis/<ident>", "GET", "getChassis",
              "Show a chassis by UUID (admin)", 200, result="Chassis"),
    Operation("/v1/chassis/<ident>", "PATCH", "updateChassis",
              "Update a chassis (JSON patch, admin)", 200, _PATCH,
              "Chassis"),
    Operation("/v1/chassis/<ident>", "DELETE", "deleteChassis",
              "Delete a chassis no node names (admin)", 204),
    Operation("/v1/chassis/<ident>/nodes", "GET", "listChassisNodes",
              "List the nodes of a chassis (admin)", 200,
              result="NodeList"),
    Operation("/v1/chassis/<ident>/nodes/detail", "GET",
              "listChassisNodesDetail",
              "List the nodes of a chassis with every field (admin)", 200,
              result="NodeList"),
    Operation("/v1/nodes", "GET", "listNodes", "List nodes", 200,
              result="NodeList"),
    Operation("/v1/nodes", "POST", "createNode",
              "Enroll a fake-hardware node (admin)", 201, _node_create,
              "Node"),
    Operation("/v1/nodes/detail", "GET", "listNodesDetail",
              "List nodes with every field", 200, result="NodeList"),
    Operation("/v1/nodes/<ident>", "GET", "getNode", "Show a node", 200,
              result="Node"),
    Operation("/v1/nodes/<ident>", "PATCH", "updateNode",
              "Update a node (JSON patch, admin)", 200, _PATCH, "Node"),
    Operation("/v1/nodes/<ident>", "DELETE", "deleteNode",
              "Delete a node (admin)", 204),
    Operation("/v1/nodes/<ident>/allocation", "GET", "getNodeAllocation",
              "Show the allocation of a node", 200, result="Allocation"),
    Operation("/v1/nodes/<ident>/allocation", "DELETE",
              "deleteNodeAllocation", "Delete the allocation of a node",
              204),
    Operation("/v1/nodes/<ident>/states", "GET", "getNodeStates",
              "Show a node's power and provision states", 200),
    Operation("/v1/nodes/<ident>/states/provision", "PUT",
              "setProvisionState", "Change the provision state (admin)",
              202, _fixed(schemas.PROVISION)),
    Operation("/v1/nodes/<ident>/states/power", "PUT", "setPowerState",
              "Change the power state (admin)", 202,
              _fixed(schemas.POWER)),
    Operation("/v1/nodes/<ident>/states/boot_mode", "PUT", "setBootMode",
              "Change the boot mode (admin; fails on fake hardware)", 202,
              _fixed(boot_mode.BODY)),
    Operation("/v1/nodes/<ident>/states/secure_boot", "PUT",
              "setSecureBoot",
              "Change secure boot (admin; fails on fake hardware)", 202,
              _fixed(boot_mode.BODY)),
    Operation("/v1/nodes/<ident>/maintenance", "PUT", "setMaintenance",
              "Put a node into maintenance (admin)", 202,
              _fixed(schemas.MAINTENANCE)),
    Operation("/v1/nodes/<ident>/maintenance", "DELETE", "unsetMaintenance",
              "Take a node out of maintenance (admin)", 202),
    Operation("/v1/nodes/<ident>/validate", "GET", "validateNode",
              "Validate a node's interfaces", 200),
    Operation("/v1/nodes/<ident>/firmware", "GET", "listNodeFirmware",
              "List a node's firmware components (1.86)", 200),
    Operation("/v1/nodes/<ident>/vmedia", "POST", "attachVirtualMedia",
              "Attach virtual media (1.89; fails on fake hardware)", 204,
              _fixed(schemas.VMEDIA_ATTACH)),
    Operation("/v1/nodes/<ident>/vmedia", "DELETE", "detachVirtualMedia",
              "Detach virtual media (1.89; fails on fake hardware)", 204),
    Operation("/v1/nodes/<ident>/traits", "GET", "listNodeTraits",
              "List a node's traits", 200),
    Operation("/v1/nodes/<ident>/traits", "PUT", "setNodeTraits",
              "Replace a node's traits (admin)", 204,
              _fixed(schemas.TRAITS_SET)),
    Operation("/v1/nodes/<ident>/traits", "DELETE", "removeNodeTraits",
              "Remove every trait of a node (admin)", 204),
    Operation("/v1/nodes/<ident>/traits/<trait>", "PUT", "addNodeTrait",
              "Add one trait (admin)", 204),
    Operation("/v1/nodes/<ident>/traits/<trait>", "DELETE",
              "removeNodeTrait", "Remove one trait (admin)", 204),
    Operation("/v1/nodes/<ident>/ports", "GET", "listNodePorts",
              "List the ports of a node", 200, result="PortList"),
    Operation("/v1/nodes/<ident>/ports/detail", "GET", "listNodePortsDetail",
              "List the ports of a node with every field", 200,
              result="PortList"),
    Operation("/v1/nodes/<ident>/vifs", "GET", "listNodeVifs",
              "List the VIFs attached to a node (1.28)", 200),
    Operation("/v1/nodes/<ident>/vifs", "POST", "attachNodeVif",
              "Attach a VIF to a node (1.28, admin)", 204,
              _fixed(schemas.VIF_ATTACH)),
    Operation("/v1/nodes/<ident>/vifs/<vif>", "DELETE", "detachNodeVif",
              "Detach a VIF from a node (1.28, admin)", 204),
    Operation("/v1/shards", "GET", "listShards",
              "List shards with their node counts (1.82, admin)", 200),
    Operation("/v1/ports", "GET", "listPorts",
              "List ports (members: of nodes they own or lease)", 200,
              result="PortList"),
    Operation("/v1/ports", "POST", "createPort",
              "Create a port of a node; its MAC address is unique (admin)",
              201, _fixed(schemas.PORT), "Port"),
    Operation("/v1/ports/detail", "GET", "listPortsDetail",
              "List ports with every field", 200, result="PortList"),
    Operation("/v1/ports/<ident>", "GET", "getPort", "Show a port by UUID",
              200, result="Port"),
    Operation("/v1/ports/<ident>", "PATCH", "updatePort",
              "Update a port (JSON patch, admin)", 200, _PATCH, "Port"),
    Operation("/v1/ports/<ident>", "DELETE", "deletePort",
              "Delete a port (admin)", 204),
    Operation("/v1/allocation_capacity", "GET", "getAllocationCapacity",
              "Extension: per resource class total, allocated, reserved "
              "(by reason) and free nodes", 200),
    Operation("/v1/allocation_explain", "POST", "explainAllocation",
              "Extension: the selection funnel of an allocation request "
              "(constraints included), without reserving", 200,
              _allocation_explain),
    Operation("/v1/allocation_groups", "POST", "createAllocationGroup",
              "Extension (header X-Baremetal-Alloc-Extensions: groups): "
              "reserve count nodes in one transaction, all active or "
              "none (409, nothing created)", 201, _allocation_group,
              headers=("Extensions",)),
    Operation("/v1/allocation_changes", "GET", "watchAllocations",
              "Extension (header X-Baremetal-Alloc-Extensions: watch): "
              "the committed changes of the allocations the caller may "
              "see, after the cursor since (default: now), as JSON lines "
              "held open (410: the cursor is out of the log, list "
              "again)", 200, headers=("Extensions",),
              media="application/x-ndjson"),
    Operation("/metrics", "GET", "getMetrics",
              "This process's and the fleet's metrics, in the Prometheus "
              "text format (admins only)", 200, media="text/plain"),
)

_PATH_PARAM = re.compile(r"<(?:[a-z]+:)?([a-z_]+)>")


def openapi_path(route: str) -> str:
    """The routing table's ``<ident>`` segments as OpenAPI ``{ident}``
    (pure)."""
    return _PATH_PARAM.sub(r"{\1}", route)


def _parameters(op: Operation) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = [
        {"$ref": f"#/components/parameters/{name}"}
        for name in ("ApiVersion", *op.headers)
    ]
    for name in _PATH_PARAM.findall(op.path):
        params.append({
            "name": name, "in": "path", "required": True,
            "schema": {"type": "string", "minLength": 1, "maxLength": 255},
        })
    for name in limits.QUERY_PARAMS.get((op.path, op.method), ()):
        schema: dict[str, Any] = {
            "type": "string", "maxLength": limits.MAX_QUERY_VALUE,
        }
        if name == "limit":
            schema = {"type": "integer", "minimum": 1}
        params.append({
            "name": name, "in": "query", "required": False,
            "schema": schema,
        })
    return params


#: OpenAPI links: where the next request's ``{ident}`` comes from.  Every
#: operation on one allocation (node) follows those that answer one or a
#: list of them, so stateful clients (schemathesis) chain real
#: identifiers instead of guessing.
_LINK_SOURCES = {
    ("/v1/allocations", "POST"): ("/v1/allocations/<ident>", "#/uuid"),
    ("/v1/allocations", "GET"): (
        "/v1/allocations/<ident>", "#/allocations/0/uuid"
    ),
    ("/v1/nodes", "POST"): ("/v1/nodes/<ident>", "#/uuid"),
    ("/v1/nodes", "GET"): ("/v1/nodes/<ident>", "#/nodes/0/uuid"),
    ("/v1/nodes/detail", "GET"): ("/v1/nodes/<ident>", "#/nodes/0/uuid"),
    ("/v1/ports", "POST"): ("/v1/ports/<ident>", "#/uuid"),
    ("/v1/chassis", "POST"): ("/v1/chassis/<ident>", "#/uuid"),
    ("/v1/chassis", "GET"): ("/v1/chassis/<ident>", "#/chassis/0/uuid"),
    ("/v1/ports", "GET"): ("/v1/ports/<ident>", "#/ports/0/uuid"),
}


def _links(op: Operation) -> dict[str, Any]:
    """The links of ``op``'s success response (pure)."""
    source = _LINK_SOURCES.get((op.path, op.method))
    if source is None:
        return {}
    prefix, pointer = source
    return {
        target.operation_id[0].upper() + target.operation_id[1:]: {
            "operationId": target.operation_id,
            "parameters": {"ident": f"$response.body{pointer}"},
        }
        for target in OPERATIONS
        if target.path == prefix or target.path.startswith(prefix + "/")
    }


def _operation(op: Operation) -> dict[str, Any]:
    success: dict[str, Any] = {"description": "Success"}
    links = _links(op)
    if links:
        success["links"] = links
    if op.result is not None:
        success["content"] = {"application/json": {
            "schema": {"$ref": f"#/components/schemas/{op.result}"}
        }}
    elif op.status == 200:
        success["content"] = {op.media: {"schema": {
            "type": "object" if op.media == "application/json"
            else "string"}}}
    responses: dict[str, Any] = {str(op.status): success}
    for status in ("400", "403", "404", "405", "406", "409", "413"):
        responses[status] = _ERROR_REF
    responses["401"] = {"$ref": "#/components/responses/Unauthorized"}
    result: dict[str, Any] = {
        "operationId": op.operation_id,
        "summary": op.summary,
        "parameters": _parameters(op),
        "responses": responses,
    }
    if op.body is not None:
        result["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": op.body()}},
        }
    return result


def _object(fields: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {} for name in fields},
    }


def document() -> dict[str, Any]:
    """The OpenAPI document (deterministic, JSON-serialisable)."""
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        paths.setdefault(openapi_path(op.path), {})[op.method.lower()] = (
            _operation(op)
        )
    error = {
        "type": "object",
        "properties": {"error_message": {
            "type": "string",
            "description": "A JSON string with faultstring, faultcode "
                           "and debuginfo, as Ironic answers.",
        }},
        "required": ["error_message"],
    }
    auth_error = {
        "type": "object",
        "properties": {"error": {
            "type": "object",
            "properties": {
                "message": {"type": "string"},
                "code": {"type": "integer"},
            },
        }},
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "baremetal-allocclient reference server",
            "version": str(_LATEST),
            "description": (
                "Ironic-compatible allocation, node, port and chassis API. "
                "Request "
                f"schemas are those of API version {_LATEST}; see "
                "doc/source/howto/security.rst for roles and limits."
            ),
        },
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "security": [{"httpBasic": []}, {}],
        "paths": paths,
        "components": {
            "securitySchemes": {"httpBasic": {
                "type": "http", "scheme": "basic",
                "description": "Only with --auth-strategy http_basic.",
            }},
            "parameters": {"ApiVersion": {
                "name": versions.HEADER, "in": "header", "required": False,
                "schema": {"type": "string", "pattern":
                           r"^(latest|[0-9]+\.[0-9]+)$"},
            }, "Prefer": {
                "name": "Prefer", "in": "header", "required": False,
                "description": (
                    "Extension (RFC 7240): 'wait=N' holds the answer until "
                    "the allocation is active or error, at most N seconds "
                    "(capped by serve --max-prefer-wait); the response "
                    "then carries 'Preference-Applied'.  'respond-async' "
                    "or no header: answer at once, like Ironic."
                ),
                "schema": {"type": "string"},
            }, "Extensions": {
                "name": "X-Baremetal-Alloc-Extensions", "in": "header",
                "required": True,
                "description": (
                    "Opt-in to this server's extensions: 'groups' for "
                    "allocation groups (without it the path answers 404, "
                    "as on Ironic)."
                ),
                "schema": {"type": "string", "const": "groups"},
            }},
            "responses": {
                "Error": {
                    "description": "An error in Ironic's format",
                    "content": {"application/json": {"schema": error}},
                },
                "Unauthorized": {
                    "description": "Missing or wrong credentials",
                    "headers": {"WWW-Authenticate": {
                        "schema": {"type": "string"}
                    }},
                    "content": {"application/json": {"schema": auth_error}},
                },
            },
            "schemas": {
                "Allocation": _object(schemas.ALLOCATION_FIELDS),
                "AllocationList": {
                    "type": "object",
                    "properties": {
                        "allocations": {
                            "type": "array",
                            "items": {
                                "$ref": "#/components/schemas/Allocation"
                            },
                        },
                        "next": {"type": "string"},
                    },
                },
                "Node": {"type": "object"},
                "Chassis": _object(CHASSIS_FIELDS),
                "ChassisList": {
                    "type": "object",
                    "properties": {
                        "chassis": {"type": "array", "items": {
                            "$ref": "#/components/schemas/Chassis"
                        }},
                        "next": {"type": "string"},
                    },
                },
                "Port": _object([name for name, since in PORT_FIELDS
                                 if since <= _LATEST.minor]),
                "PortList": {
                    "type": "object",
                    "properties": {
                        "ports": {"type": "array", "items": {
                            "$ref": "#/components/schemas/Port"
                        }},
                        "next": {"type": "string"},
                    },
                },
                "NodeList": {
                    "type": "object",
                    "properties": {
                        "nodes": {"type": "array", "items": {
                            "$ref": "#/components/schemas/Node"
                        }},
                        "next": {"type": "string"},
                    },
                },
            },
        },
    }


def render() -> str:
    """The document as committed: sorted keys, two-space indent."""
    return json.dumps(document(), indent=2, sort_keys=True) + "\n"


def serve(ctx: Any) -> Response:
    """GET /v1/openapi.json."""
    return Response(render(), status=200, content_type="application/json")


def main() -> int:
    """Print the document (to refresh the committed copy)."""
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
