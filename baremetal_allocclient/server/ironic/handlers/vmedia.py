"""``/v1/nodes/{node}/vmedia`` (API 1.89): attach and detach virtual media.

Ironic checks the request, answers 204 and runs the action in the
background; its ``fake-hardware`` management interface implements no
virtual media, so the action fails and the failure is the node's
``last_error`` (``Driver fake-hardware does not support ...``).  The
reference server records the same outcome before it answers.  (Ironic
first fetches the image for an attach; when that fails, its
``last_error`` names the fetch instead.)
"""

from __future__ import annotations

import urllib.parse

from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.api.context import (
    Context,
    empty_response,
    node_scope,
)
from baremetal_allocclient.server.api.errors import bad_request, no_route
from baremetal_allocclient.server.api.http import Response
from baremetal_allocclient.server.ironic.service import management

#: The minor version that introduced attach and detach.
VMEDIA_SINCE = 89
#: The URL schemes Ironic accepts (ironic.common.image_publisher).
URL_SCHEMES = ("http", "https", "nfs", "cifs", "smb")


def _gate(ctx: Context) -> None:
    if ctx.minor < VMEDIA_SINCE:
        raise no_route()


def attach_vmedia(ctx: Context, ident: str) -> Response:
    """POST /v1/nodes/{ident}/vmedia."""
    _gate(ctx)
    body = ctx.json_body()
    schemas.validate(body, schemas.VMEDIA_ATTACH, "Schema error for vmedia")
    assert isinstance(body, dict)
    scheme = urllib.parse.urlparse(body["image_url"]).scheme
    if scheme not in URL_SCHEMES:
        raise bad_request(f"Unsupported or missing URL scheme: {scheme}")
    device = body["device_type"]
    management.fail_unsupported(
        ctx.services.db, node_scope(ctx), ident,
        f"Could not attach device {device} to node {{node}}: {{exc}}",
        "attach_virtual_media")
    return empty_response(204)


def detach_vmedia(ctx: Context, ident: str) -> Response:
    """DELETE /v1/nodes/{ident}/vmedia[?device_types=a,b]."""
    _gate(ctx)
    raw = ctx.query("device_types")
    devices = [item for item in (raw or "").split(",") if item] or None
    if devices:
        invalid = [item for item in devices
                   if item not in schemas.VMEDIA_DEVICES]
        if invalid:
            raise bad_request(
                f"Invalid device type(s) {', '.join(invalid)} (valid are "
                f"{', '.join(schemas.VMEDIA_DEVICES)})")
    management.fail_unsupported(
        ctx.services.db, node_scope(ctx), ident,
        f"Could not detach device(s) {devices} from node {{node}}: {{exc}}",
        "detach_virtual_media")
    return empty_response(204)
