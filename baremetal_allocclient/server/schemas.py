"""The API's documents, declared once (request bodies at each version,
and resources after a patch), and the validators built from them: the
handlers check requests with them, the services the resources they
patch, and ``openapi.py`` describes the API with them.

A document that fails is :class:`~baremetal_allocclient.server.domain.
errors.Invalid` (a 400) whose message starts like Ironic's (``Schema
error: ...``) and names the offending value.

Two validators read each schema.  jsonschema-rs decides whether an
instance passes: a create body with three traits in 0.6 µs, where
jsonschema takes 93 µs (most of it the traits' ``anyOf`` over the
os-traits catalogue), the smallest body in 0.4 µs instead of 9.
Whatever it refuses, or cannot read (a string holding a lone
surrogate where a pattern applies), is decided again by jsonschema,
whose verdict stands and whose error names the problem as Ironic's
does.  Where the two disagree on JSON data (a pattern's ``$`` before a
final newline, which only Python's ``re`` matches), jsonschema-rs is
the stricter, so the verdict is always jsonschema's: ``test_schemas``
checks, on generated JSON data against every schema here, that
jsonschema-rs never passes what jsonschema refuses.  Instances are
JSON data, as ``json.loads`` gives it (jsonschema-rs takes a tuple for
an array, jsonschema does not).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import jsonschema
import jsonschema_rs

from baremetal_allocclient import constraints, groups
from baremetal_allocclient.server.api import versions
from baremetal_allocclient.server.domain.errors import Invalid
from baremetal_allocclient.server.domain.identifiers import (
    CUSTOM_TRAIT_PATTERN,
    NAME_MAX,
    STANDARD_TRAITS,
    TRAIT_MAX,
)

RESOURCE_CLASS_MAX = 80
TRAIT: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": TRAIT_MAX,
    # Ironic's order, which decides the "Possible root cause" named.
    "anyOf": [
        {"pattern": CUSTOM_TRAIT_PATTERN},
        {"enum": sorted(STANDARD_TRAITS)},
    ],
}


_NULLABLE_STRING: dict[str, Any] = {"type": ["string", "null"]}
_NULLABLE_OBJECT: dict[str, Any] = {"type": ["object", "null"]}
_RESOURCE_CLASS: dict[str, Any] = {
    "type": ["string", "null"],
    "maxLength": RESOURCE_CLASS_MAX,
}
_PROJECT: dict[str, Any] = {"type": ["string", "null"], "maxLength": 255}
# Input limits (issue 9): every string and list a client sends is bounded.
MAX_TRAITS = 50
MAX_CANDIDATES = 1000
MAX_PATCH_OPS = 100
MAX_MESSAGE = 300
_NAME: dict[str, Any] = {"type": ["string", "null"], "maxLength": NAME_MAX}

ALLOCATION_FIELDS = (
    "candidate_nodes",
    "created_at",
    "extra",
    "last_error",
    "links",
    "name",
    "node_uuid",
    "resource_class",
    "state",
    "traits",
    "updated_at",
    "uuid",
    "owner",
)


_PROPERTY_VALUE: dict[str, Any] = {
    "type": ["string", "number"], "maxLength": 255,
}
_PROPERTY_SET: dict[str, Any] = {
    "type": "array", "items": _PROPERTY_VALUE, "minItems": 1,
    "maxItems": constraints.MAX_SET,
}
_PROPERTY_CONSTRAINT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "key": {"type": "string", "minLength": 1,
                "maxLength": constraints.MAX_KEY},
        "min": {"type": "number"},
        "max": {"type": "number"},
        "eq": _PROPERTY_VALUE,
        "in": _PROPERTY_SET,
        "not_in": _PROPERTY_SET,
        "exists": {"const": True},
        "not_exists": {"const": True},
    },
    "required": ["key"],
    "minProperties": 2,
    "maxProperties": 2,
    "additionalProperties": False,
}
#: The constraints extension's document (doc/source/howto/choosing-nodes.rst).
CONSTRAINTS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "forbidden_traits": {
            "type": "array", "items": TRAIT,
            "maxItems": constraints.MAX_FORBIDDEN_TRAITS,
        },
        "any_traits": {
            "type": "array", "items": TRAIT, "minItems": 1,
            "maxItems": constraints.MAX_FORBIDDEN_TRAITS,
        },
        "properties": {
            "type": "array",
            "maxItems": constraints.MAX_PROPERTY_CONSTRAINTS,
            "items": _PROPERTY_CONSTRAINT,
        },
        "any_of": {
            "type": "array", "minItems": 1,
            "maxItems": constraints.MAX_ALTERNATIVES,
            "items": {"type": "array", "minItems": 1,
                      "maxItems": constraints.MAX_PROPERTY_CONSTRAINTS,
                      "items": _PROPERTY_CONSTRAINT},
        },
        "conductor_group": {"type": "string", "maxLength": 255},
        "shard": {"type": "string", "maxLength": 255},
        "node_owner": {"type": "string", "maxLength": 255},
        "node_lessee": {"type": "string", "maxLength": 255},
        "node_name": {"type": "string", "maxLength": NAME_MAX},
        "require_node_name": {"type": "boolean"},
        "order": {"enum": [o.value for o in constraints.Order]},
    },
    "additionalProperties": False,
}


#: The queue extension's field of POST /v1/allocations: wait in line for
#: capacity, at most ``timeout`` seconds (default: the server's maximum).
#: The ``group`` field of a create (the groups extension; see
#: ``allocation/marks.py``).
GROUP: dict[str, Any] = {
    "type": ["object", "null"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 255},
        "size": {"type": "integer", "minimum": 1,
                 "maximum": groups.MAX_SIZE},
    },
    "required": ["name", "size"],
    "additionalProperties": False,
}
#: The ``lease`` field of a create or a patch (the leases extension).
LEASE: dict[str, Any] = {
    "type": ["object", "null"],
    "properties": {
        "expires_at": {"type": "string", "maxLength": 64},
        "duration": {"type": "string", "maxLength": 64},
    },
    "additionalProperties": False,
}

QUEUE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "timeout": {"type": "number", "exclusiveMinimum": 0},
    },
    "additionalProperties": False,
}


@functools.cache
def allocation_create(
    version: versions.Version, extended: bool = False, queue: bool = False,
    group: bool = False, lease: bool = False,
) -> dict[str, Any]:
    """POST /v1/allocations body at this version (``extended``: the
    request opted into the constraints extension; ``queue``: into the
    queue extension; ``group``, ``lease``: into the groups and leases
    extensions).  Built once per combination and shared, as the
    module's constant schemas are: not to be modified."""
    props: dict[str, Any] = {
        "resource_class": _RESOURCE_CLASS,
        "traits": {
            "type": ["array", "null"],
            "items": TRAIT,
            "maxItems": MAX_TRAITS,
        },
        "candidate_nodes": {
            "type": ["array", "null"],
            "items": {"type": "string", "maxLength": NAME_MAX},
            "maxItems": MAX_CANDIDATES,
        },
        # name and uuid: length checked with Ironic's wording afterwards.
        "name": _NULLABLE_STRING,
        "uuid": _NULLABLE_STRING,
        "extra": _NULLABLE_OBJECT,
    }
    if version.minor >= versions.ALLOCATION_BACKFILL:
        props["node"] = _NAME
    if version.minor >= versions.ALLOCATION_OWNER:
        props["owner"] = _PROJECT
    if extended:
        props["constraints"] = CONSTRAINTS
    if queue:
        props["queue"] = QUEUE
    if group:
        props["group"] = GROUP
    if lease:
        props["lease"] = LEASE
    return {
        "type": "object",
        "properties": props,
        "additionalProperties": False,
    }


def allocation_group(version: versions.Version, lease: bool = False
                     ) -> dict[str, Any]:
    """POST /v1/allocation_groups body (the groups extension): what
    ``POST /v1/allocations`` takes with the constraints extension, but
    ``name`` names the group, ``uuids`` (optional) are the members'
    UUIDs in order, and there is no backfill (``node``)."""
    props = dict(allocation_create(version, extended=True,
                                   lease=lease)["properties"])
    props.pop("node", None)
    props.pop("uuid")
    props["count"] = {"type": "integer", "minimum": 1,
                      "maximum": groups.MAX_SIZE}
    props["name"] = {"type": ["string", "null"],
                     "maxLength": groups.MAX_NAME}
    props["uuids"] = {
        "type": ["array", "null"],
        "items": {"type": "string", "maxLength": 36},
        "maxItems": groups.MAX_SIZE,
    }
    props["spread"] = SPREAD
    return {
        "type": "object",
        "properties": props,
        "required": ["count", "resource_class"],
        "additionalProperties": False,
    }


#: The ``spread`` field of a group (doc/source/howto/choosing-nodes.rst).
SPREAD: dict[str, Any] = {
    "type": ["object", "null"],
    "properties": {
        "over": {"type": "string", "minLength": 1,
                 "maxLength": constraints.MAX_KEY + 9},
        "max_per_domain": {"type": "integer", "minimum": 1,
                           "maximum": groups.MAX_SIZE},
        "min_domains": {"type": ["integer", "null"], "minimum": 1,
                        "maximum": groups.MAX_SIZE},
    },
    "required": ["over"],
    "additionalProperties": False,
}


ALLOCATION_PATCHED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": _NULLABLE_STRING,
        "extra": _NULLABLE_OBJECT,
    },
}
#: The same with the leases extension's ``lease`` field.
_ALLOCATION_PATCHED_LEASE: dict[str, Any] = {
    "type": "object",
    "properties": {
        **ALLOCATION_PATCHED["properties"],
        "lease": LEASE,
    },
}


def allocation_patched(lease: bool = False) -> dict[str, Any]:
    """A patched allocation (``lease``: the request opted into the
    leases extension)."""
    return _ALLOCATION_PATCHED_LEASE if lease else ALLOCATION_PATCHED

JSON_PATCH: dict[str, Any] = {
    "type": "array",
    "maxItems": MAX_PATCH_OPS,
    "items": {
        "type": "object",
        "properties": {
            "op": {"type": "string", "enum": ["add", "replace", "remove"]},
            "path": {
                "type": "string", "pattern": "^/.+", "maxLength": 1024
            },
            "value": {},
        },
        "required": ["op", "path"],
        "additionalProperties": False,
    },
}

_INTERFACES = (
    "bios_interface",
    "boot_interface",
    "console_interface",
    "deploy_interface",
    "firmware_interface",
    "inspect_interface",
    "management_interface",
    "network_interface",
    "power_interface",
    "raid_interface",
    "rescue_interface",
    "storage_interface",
    "vendor_interface",
)


#: oslo's ``bool_from_string`` (strict), which Ironic applies to the
#: boolean fields of node bodies given as strings.
BOOLEAN_STRINGS: dict[str, bool] = {
    "0": False, "1": True, "f": False, "false": False, "n": False,
    "no": False, "off": False, "on": True, "t": True, "true": True,
    "y": True, "yes": True,
}
#: A node boolean: JSON boolean, null, or one of :data:`BOOLEAN_STRINGS`.
FLEXIBLE_BOOLEAN: dict[str, Any] = {"type": ["string", "boolean", "null"]}
#: The node fields Ironic reads as booleans.
NODE_BOOLEANS = ("automated_clean", "console_enabled", "disable_power_off",
                 "maintenance", "protected", "retired")


def boolean(field: str, value: str | None) -> bool | None:
    """A boolean given as a string, read as Ironic reads it (None stays
    None); any other string is :class:`Invalid`, in Ironic's wording."""
    if value is None:
        return None
    found = BOOLEAN_STRINGS.get(value.strip().lower())
    if found is None:
        acceptable = ", ".join(f"'{k}'" for k in sorted(BOOLEAN_STRINGS))
        shown = value if len(value) <= 80 else f"{value[:80]}..."
        raise Invalid(
            f"Invalid {field}: Unrecognized value '{shown}', "
            f"acceptable values are: {acceptable}")
    return found


def node_booleans(body: dict[str, Any],
                  fields: Sequence[str] = NODE_BOOLEANS) -> dict[str, Any]:
    """``body`` with the booleans among ``fields`` given as strings read
    by :func:`boolean`."""
    result = dict(body)
    for field in fields:
        value = body.get(field)
        if isinstance(value, str):
            result[field] = boolean(field, value)
    return result


def secure_boot_value(value: object) -> bool | None:
    """``secure_boot`` as Ironic 39 stores it: its API checks only the
    type, and its node object reads a string as Python's ``bool`` does,
    so any non-empty string (even ``"false"``) is true."""
    if value is None:
        return None
    return bool(value)


def node_create(version: versions.Version) -> dict[str, Any]:
    """POST /v1/nodes body at this version."""
    props: dict[str, Any] = {
        "driver": {"type": "string", "maxLength": 255},
        "name": _NULLABLE_STRING,
        "uuid": _NULLABLE_STRING,
        "chassis_uuid": _NULLABLE_STRING,
        "resource_class": _RESOURCE_CLASS,
        "properties": _NULLABLE_OBJECT,
        "extra": _NULLABLE_OBJECT,
        "driver_info": _NULLABLE_OBJECT,
        "instance_info": _NULLABLE_OBJECT,
        "instance_uuid": _NULLABLE_STRING,
        "description": {"type": ["string", "null"], "maxLength": 4096},
        "owner": _PROJECT,
        "lessee": _PROJECT,
        "automated_clean": FLEXIBLE_BOOLEAN,
        "conductor_group": {"type": ["string", "null"], "maxLength": 255},
        "retired": FLEXIBLE_BOOLEAN,
        "retired_reason": _NULLABLE_STRING,
        "network_data": _NULLABLE_OBJECT,
        "shard": {"type": ["string", "null"], "maxLength": 255},
        "parent_node": {"type": ["string", "null"], "maxLength": 36},
        "instance_name": {"type": ["string", "null"], "minLength": 1,
                          "maxLength": 255},
        "disable_power_off": FLEXIBLE_BOOLEAN,
        "maintenance": FLEXIBLE_BOOLEAN,
        "console_enabled": FLEXIBLE_BOOLEAN,
        "boot_mode": {"type": ["string", "null"], "maxLength": 255},
        "secure_boot": FLEXIBLE_BOOLEAN,
    }
    for iface in _INTERFACES:
        props[iface] = _NULLABLE_STRING
    return {
        "type": "object",
        "properties": props,
        "required": ["driver"],
        "additionalProperties": False,
    }


TRAITS_SET: dict[str, Any] = {
    "type": "object",
    "properties": {
        "traits": {"type": "array", "items": TRAIT, "maxItems": MAX_TRAITS}
    },
    "required": ["traits"],
    "additionalProperties": False,
}

PROVISION: dict[str, Any] = {
    "type": "object",
    "properties": {
        "target": {"type": "string"},
        "configdrive": {"type": ["string", "object", "null"]},
        "clean_steps": {"type": ["array", "null"]},
        "deploy_steps": {"type": ["array", "null"]},
        "rescue_password": {"type": ["string", "null"]},
        "disable_ramdisk": {"type": ["boolean", "null"]},
    },
    "required": ["target"],
    "additionalProperties": False,
}

POWER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "target": {"type": "string"},
        "timeout": {"type": ["integer", "null"], "minimum": 1},
    },
    "required": ["target"],
    "additionalProperties": False,
}

#: Ironic's virtual media devices (ironic.common.boot_devices).
VMEDIA_DEVICES = ("disk", "cdrom", "floppy")
VMEDIA_ATTACH: dict[str, Any] = {
    "type": "object",
    "properties": {
        "device_type": {"type": "string", "enum": list(VMEDIA_DEVICES)},
        "image_url": {"type": "string"},
        "image_download_source": {"type": "string",
                                  "enum": ["http", "local", "swift"]},
    },
    "required": ["device_type", "image_url"],
    "additionalProperties": False,
}

MAINTENANCE: dict[str, Any] = {
    "type": ["object", "null"],
    "properties": {"reason": _NULLABLE_STRING},
    "additionalProperties": False,
}


def validate(
    instance: object, schema: dict[str, Any], prefix: str = "Schema error"
) -> None:
    """Raise :class:`Invalid` naming the first problem when ``instance``
    (JSON data) is invalid (see the module's docstring for the two
    validators)."""
    checker, validator = _validators(schema)
    if _passes(checker, instance):
        return
    error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    if error is None:
        return
    message = _with_root_cause(error)
    if len(message) > MAX_MESSAGE:
        # The default message quotes the whole offending value.
        message = (
            f"{message[:MAX_MESSAGE]}... (at {error.json_path}: "
            f"{error.validator} {error.validator_value!r:.60})"
        )
    raise Invalid(f"{prefix}: {message}")


def _passes(checker: Any, instance: object) -> bool:
    """jsonschema-rs's verdict; False when it cannot read ``instance``
    (jsonschema then decides)."""
    try:
        return bool(checker.is_valid(instance))
    except ValueError:  # a lone surrogate, a key that is not a string
        return False


_Validators = tuple[Any, jsonschema.Draft202012Validator]
#: Both validators by the ``id`` of their schema (kept with it, so the
#: id stays its own): the schemas are module constants or built once,
#: and making jsonschema's validator costs as much as validating a
#: request's body.
_VALIDATORS: dict[int, tuple[dict[str, Any], _Validators]] = {}
_MAX_VALIDATORS = 256


def _validators(schema: dict[str, Any]) -> _Validators:
    kept = _VALIDATORS.get(id(schema))
    if kept is not None and kept[0] is schema:
        return kept[1]
    made = (jsonschema_rs.Draft202012Validator(schema),
            jsonschema.Draft202012Validator(schema))
    if len(_VALIDATORS) >= _MAX_VALIDATORS:  # a schema built per call
        _VALIDATORS.clear()
    _VALIDATORS[id(schema)] = (schema, made)
    return made


def _with_root_cause(error: jsonschema.ValidationError) -> str:
    """The error's message, and for ``anyOf``/``oneOf`` the likeliest
    cause among the alternatives, as Ironic words it."""
    cause = None
    current = error
    while current.context:
        best = jsonschema.exceptions.best_match(current.context)
        if best is None:
            break
        current = best
        cause = current.message
    if cause is None:
        return error.message
    return f"{error.message}. Possible root cause: {cause}"


_LOCAL_LINK_PROPERTIES: dict[str, Any] = {
    "port_id": {"type": "string"},
    "switch_id": {"type": "string"},
    "hostname": {"type": "string"},
    "switch_info": {"type": "string"},
    "network_type": {"type": "string", "enum": ["managed", "unmanaged"]},
}


def _local_link(required: list[str], **override: Any) -> dict[str, Any]:
    properties = dict(_LOCAL_LINK_PROPERTIES, **override)
    return {"type": "object", "properties": properties,
            "additionalProperties": False, "required": required}


#: ``local_link_connection``: Ironic's variants (a switch port, a smart
#: NIC, an unmanaged network, or nothing).
LOCAL_LINK: dict[str, Any] = {"anyOf": [
    _local_link(["port_id", "switch_id"]),
    _local_link(["port_id", "hostname"]),
    _local_link(["network_type"], network_type={
        "type": "string", "enum": ["unmanaged"]}),
    {"type": "object", "additionalProperties": False},
]}

_BOOLEAN_LIKE: dict[str, Any] = {"type": ["string", "boolean", "null"]}

#: POST /v1/ports, and a port after a PATCH: Ironic's PORT_SCHEMA.
#: Fields newer than the request's version are refused afterwards (406).
PORT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "address": {"type": "string", "maxLength": 18},
        "extra": _NULLABLE_OBJECT,
        "is_smartnic": _BOOLEAN_LIKE,
        "local_link_connection": {"type": ["null", "object"]},
        "node_ident": {"type": "string", "maxLength": NAME_MAX},
        "node_uuid": {"type": "string", "maxLength": NAME_MAX},
        "physical_network": {"type": ["string", "null"], "maxLength": 64},
        "portgroup_uuid": _NULLABLE_STRING,
        "pxe_enabled": _BOOLEAN_LIKE,
        "uuid": _NULLABLE_STRING,
        "name": _NULLABLE_STRING,
        "description": {"type": ["string", "null"], "maxLength": 255},
        "vendor": {"type": ["string", "null"], "maxLength": 32},
        "category": {"type": ["string", "null"], "maxLength": 80},
        "available_for_dynamic_portgroup": {"type": "boolean"},
    },
    "required": ["address"],
    "oneOf": [{"required": ["node_ident"]}, {"required": ["node_uuid"]}],
    "additionalProperties": False,
}

#: POST /v1/nodes/{node}/vifs: an ``id`` (a UUID or a name) and anything
#: else the caller attaches (ignored, as the noop network interface does).
VIF_ATTACH: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {"type": "string", "maxLength": NAME_MAX}},
    "required": ["id"],
    "additionalProperties": True,
}


#: POST /v1/chassis, and a chassis after a PATCH (Ironic's
#: ``CHASSIS_SCHEMA``).
CHASSIS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "uuid": _NULLABLE_STRING,
        "extra": _NULLABLE_OBJECT,
        "description": {"type": ["string", "null"], "maxLength": 255},
    },
    "additionalProperties": False,
}
