"""``PUT /v1/nodes/{node}/states/boot_mode`` and ``/secure_boot`` (1.76).

Ironic 39 accepts both requests (202) and hands them to the node's
management interface; fake-hardware's implements neither, so the change
fails and Ironic records why in ``last_error``, leaving ``boot_mode`` and
``secure_boot`` as they were.  This module does the same, at once.
"""

from __future__ import annotations

from typing import Any

from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.api.context import (
    Context,
    empty_response,
    node_scope,
)
from baremetal_allocclient.server.api.errors import (
    bad_request,
)
from baremetal_allocclient.server.api.http import Response
from baremetal_allocclient.server.domain.errors import (
    DomainError,
    Invalid,
    NotFound,
)
from baremetal_allocclient.server.ironic.service import management

SINCE = 76
BOOT_MODES = ("bios", "uefi")
#: The request body: ``{"target": ...}``, the target checked by the
#: handlers in Ironic's order and wording.
BODY: dict[str, Any] = {"type": ["object", "null"],
                        "properties": {"target": {}}}


def _target(ctx: Context) -> object:
    body = ctx.json_body()
    schemas.validate(body, BODY)
    return (body or {}).get("target")


def _fail_on_fake_hardware(ctx: Context, ident: str, invalid: str | None,
                           last_error: str) -> Response:
    """The checks Ironic makes after finding the node (the version, then
    the target), then the failure fake-hardware reports."""
    refusal: DomainError | None = None
    if ctx.minor < SINCE:
        refusal = NotFound("This endpoint is supported starting with the "
                           f"API version 1.{SINCE}")
    elif invalid is not None:
        refusal = Invalid(invalid)
    management.fail_boot_change(ctx.services.db, node_scope(ctx), ident,
                                refusal, last_error)
    response = empty_response(202)
    response.headers["Location"] = f"{ctx.base_url}/v1/nodes/{ident}/states"
    return response


def set_boot_mode(ctx: Context, ident: str) -> Response:
    """PUT /v1/nodes/{ident}/states/boot_mode."""
    target = _target(ctx)
    if target is not None and not isinstance(target, str):
        raise bad_request(f"Expected string for target: {target}")
    invalid = None
    if target not in BOOT_MODES:
        invalid = (f"Invalid boot mode {target} requested for "
                   f"node. Allowed boot modes are: {', '.join(BOOT_MODES)}")
    # Ironic's message, its missing quote included.
    return _fail_on_fake_hardware(
        ctx, ident, invalid,
        f"Failed to change boot mode to '{target}: Driver fake-hardware "
        "does not support set_boot_mode (disabled or not implemented).")


def set_secure_boot(ctx: Context, ident: str) -> Response:
    """PUT /v1/nodes/{ident}/states/secure_boot."""
    target = _target(ctx)
    if isinstance(target, str):  # read before the node, as Ironic does
        target = schemas.node_booleans({"target": target},
                                       ("target",))["target"]
    invalid = None
    if not isinstance(target, bool):
        invalid = (f"Invalid secure_boot {target} requested "
                   "for node. Allowed secure_boot states are: True, False) ")
    return _fail_on_fake_hardware(
        ctx, ident, invalid,
        f"Failed to change secure_boot state to '{target}': Driver "
        "fake-hardware does not support set_secure_boot_state (disabled or "
        "not implemented).")

