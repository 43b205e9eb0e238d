"""Every route the broker does not own, passed through to Ironic.

The caller's method, path, query, body and headers go to Ironic as they
came (its token included: Ironic checks the caller's own rights), with
the version the server negotiated in place of ``latest``, so both answer
at one version.  ``Host`` is kept, so the links in Ironic's answers point
at the server.  Ironic's answer comes back as it is, but for hop-by-hop
headers.  Ironic unreachable: 503 with a clear message and
``Retry-After``.

What a client changes on a node through the server is read back into
the mirror at once (:meth:`IronicSync.refresh`), and a node the client
reads in full refreshes the mirror from that answer (no extra request):
selection sees the client's own changes without waiting for the next
round.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Mapping
from typing import Any

import requests

from baremetal_allocclient.server.api.http import Request, Response
from baremetal_allocclient.server.api.limits import MAX_BODY
from baremetal_allocclient.server.api.versions import HEADER, Version
from baremetal_allocclient.server.broker import mirror
from baremetal_allocclient.server.broker.ironic_client import (
    IronicError,
    IronicUnavailable,
)
from baremetal_allocclient.server.broker.sync import IronicSync

LOG = logging.getLogger(__name__)

RETRY_AFTER = 5
#: Version of the ``broker`` entry of ``GET /v1``'s extensions.
BROKER_VERSION = 1
DEFAULT_TIMEOUT = 60.0
#: Headers that belong to one connection, never forwarded (RFC 9110).
_HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
    "te", "trailer", "transfer-encoding", "upgrade", "content-length",
})
_NODE_PATH = re.compile(r"^/v1/nodes/(?P<ident>[^/]+)(?P<rest>/.*)?$")
_NOT_A_NODE = frozenset({"detail", "validate"})


def forwarded_headers(environ: Mapping[str, Any], version: Version
                      ) -> dict[str, str]:
    """The request headers to send on (pure): every ``HTTP_*`` header
    but hop-by-hop ones, the body's type, and the negotiated version."""
    headers: dict[str, str] = {}
    for key, value in environ.items():
        if not key.startswith("HTTP_"):
            continue
        name = key[5:].replace("_", "-").title()
        if name.lower() not in _HOP_BY_HOP:
            headers[name] = value
    if environ.get("CONTENT_TYPE"):
        headers["Content-Type"] = environ["CONTENT_TYPE"]
    headers[HEADER] = f"{version.major}.{version.minor}"
    return headers


def changed_node(method: str, path: str) -> str | None:
    """The node a request through the server may change (pure): its
    ident for a write below ``/v1/nodes/<ident>``, else None."""
    if method in ("GET", "HEAD"):
        return None
    match = _NODE_PATH.match(path)
    if match is None or match["ident"] in _NOT_A_NODE:
        return None
    return match["ident"]


def complete_node(body: Any) -> bool:
    """Whether an answer is one node with every field the mirror keeps."""
    return (isinstance(body, dict) and "uuid" in body
            and "provision_state" in body and "traits" in body
            and "allocation_uuid" in body
            and all(key in body for key in mirror.COPIED))


class Passthrough:
    """Forwards one request to Ironic and answers with Ironic's answer."""

    def __init__(self, endpoint: str, sync: IronicSync,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        self._endpoint = endpoint.rstrip("/")
        self._sync = sync
        self._timeout = timeout
        self._local = threading.local()

    def advertised(self) -> dict[str, Any]:
        """The ``broker`` entry of ``GET /v1``'s extensions: the server
        fronts a real Ironic, and how stale its view of Ironic may be for
        changes made there directly."""
        return {"version": BROKER_VERSION, "fronts": "ironic",
                "sync_interval": self._sync.interval}

    def _session(self) -> requests.Session:
        session: requests.Session | None = getattr(self._local, "session",
                                                   None)
        if session is None:
            session = self._local.session = requests.Session()
        return session

    def __call__(self, request: Request, version: Version) -> Response:
        method = request.method
        url = self._endpoint + request.path
        if request.query_string:
            url += "?" + request.query_string
        body = request.body(2 * MAX_BODY)
        try:
            answer = self._session().request(
                method, url, data=body or None,
                headers=forwarded_headers(request.environ, version),
                timeout=self._timeout, allow_redirects=False)
        except requests.RequestException as exc:
            LOG.warning("Ironic unreachable for %s %s: %s", method,
                        request.path, exc)
            return _unreachable()
        if answer.status_code in (502, 503, 504):
            LOG.warning("Ironic answered %s to %s %s", answer.status_code,
                        method, request.path)
        response = Response(answer.content, answer.status_code,
                            content_type=None)
        for name, value in answer.headers.items():
            if name.lower() not in _HOP_BY_HOP:
                response.headers[name] = value
        if answer.status_code < 300:
            self._follow(method, request.path, answer)
        return response

    def _follow(self, method: str, path: str,
                answer: requests.Response) -> None:
        """Keep the mirror in step with what the client just did or saw."""
        try:
            changed = changed_node(method, path)
            if method == "POST" and path == "/v1/nodes":
                changed = _json(answer).get("uuid")
            if changed is not None:
                self._sync.refresh(idents=[changed])
            elif method == "GET" and _NODE_PATH.match(path) and \
                    complete_node(body := _json(answer)):
                self._sync.apply_documents([body])
        except (IronicError, IronicUnavailable) as exc:
            LOG.warning("Mirror not refreshed after %s %s: %s", method,
                        path, exc)
        except Exception:  # the database: Ironic has done the change
            LOG.warning("Mirror not refreshed after %s %s", method, path,
                        exc_info=True)


def _json(answer: requests.Response) -> dict[str, Any]:
    try:
        body = answer.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _unreachable() -> Response:
    message = ("Ironic, which this server fronts, is unreachable; retry "
               "later.")
    fault = {"faultcode": "Server", "faultstring": message,
             "debuginfo": None}
    response = Response(json.dumps({"error_message": json.dumps(fault)}),
                        503)
    response.headers["Retry-After"] = str(RETRY_AFTER)
    return response
