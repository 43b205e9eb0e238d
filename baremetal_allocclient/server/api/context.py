"""Per-request context handed to every handler: the request, its version,
its principal and the services."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from baremetal_allocclient.server.api import limits, storable, versions
from baremetal_allocclient.server.api.auth import principal_of
from baremetal_allocclient.server.api.http import Request, Response
from baremetal_allocclient.server.api.limits import MAX_BODY
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.domain.policy import NodeScope
from baremetal_allocclient.server.domain.principal import Principal


class SharedServices(Protocol):
    """What the shared plumbing reads of the long-lived objects behind
    every request: the database.  The object is built by the wiring
    (``server/services.py``); each wing reads the rest of it through its
    own protocol (``allocation_services``, ``ironic_services``)."""

    @property
    def db(self) -> Database: ...


@dataclass(frozen=True)
class Context:
    """One request: its version, its base URL and the services."""

    request: Request
    version: versions.Version
    base_url: str
    services: SharedServices

    @property
    def minor(self) -> int:
        """The requested minor version (major is always 1)."""
        return self.version.minor

    def json_body(self) -> Any:
        """The decoded JSON body; malformed JSON is a 400, not a 500, and
        one over :data:`MAX_BODY` a 413."""
        raw = self.request.body(MAX_BODY)
        if not raw.strip():
            return None
        limits.check_json_depth(raw)
        return storable.loads(raw)

    def query(self, name: str) -> str | None:
        """A query parameter (last one wins), None when absent."""
        values = self.request.args.getlist(name)
        return values[-1] if values else None


def json_response(body: object, status: int = 200) -> Response:
    """A JSON response."""
    return Response(json.dumps(body), status)


def json_text_response(text: str, status: int = 200) -> Response:
    """A response whose body is already JSON text (``api.json_text``)."""
    return Response(text, status)


def empty_response(status: int) -> Response:
    """A response without a body (202, 204)."""
    return Response(status=status, content_type=None)


def principal(ctx: Context) -> Principal:
    """Who sent the request (set by the authentication middleware)."""
    return principal_of(ctx.request.environ)


def node_scope(ctx: Context) -> NodeScope:
    """Who the request is from, and whether its version lets it name a
    node (from 1.5): what finding a node needs of the request."""
    return NodeScope(who=principal(ctx),
                     names=ctx.minor >= versions.NODE_NAME)
