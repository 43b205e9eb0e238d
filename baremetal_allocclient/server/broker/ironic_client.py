"""A thin, typed HTTP client for the parts of Ironic's API the broker
uses: the node list (the mirror's source), one node, and allocations.

Every request carries one pinned microversion (:data:`MICROVERSION`):
1.82 has every node field the mirror keeps (``shard`` came last) and
allocations with ``owner`` (1.60); :meth:`IronicClient.check_version`
refuses an older Ironic at start-up.  Authentication is a keystoneauth1
session: no authentication, HTTP basic, or any keystoneauth plugin from
clouds.yaml.
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from keystoneauth1 import http_basic, noauth
from keystoneauth1 import session as ks_session

from baremetal_allocclient.server.allocation.backends import remote

LOG = logging.getLogger(__name__)

MICROVERSION: Final = (1, 82)
SERVICE_TYPE: Final = "baremetal"
DEFAULT_TIMEOUT: Final = 30.0
#: Nodes per page of the mirror's reads.
PAGE: Final = 1000


class IronicError(Exception):
    """Ironic answered with an error status (its message kept)."""

    def __init__(self, method: str, path: str, status: int,
                 message: str) -> None:
        super().__init__(f"Ironic {method} {path} failed with {status}: "
                         f"{message}")
        self.status = status
        self.message = message


class IronicUnavailable(Exception):
    """Ironic could not be reached, or answered 502/503/504."""


def microversion_text(version: tuple[int, int] = MICROVERSION) -> str:
    """``1.82`` style text of a microversion tuple."""
    return f"{version[0]}.{version[1]}"


def error_message(body: Any, fallback: str) -> str:
    """The message of Ironic's error document (a JSON string inside
    ``error_message``, with ``faultstring`` or ``description``)."""
    import json

    inner = body.get("error_message") if isinstance(body, Mapping) else None
    if isinstance(inner, str):
        try:
            inner = json.loads(inner)
        except ValueError:
            return inner
    if isinstance(inner, Mapping):
        text = inner.get("faultstring") or inner.get("description")
        if text:
            return str(text)
    return fallback


def session_for(auth_type: str, endpoint: str | None,
                username: str | None = None,
                password: str | None = None) -> ks_session.Session:
    """A session for ``noauth`` or ``http_basic`` (the cloud case is
    built by the caller from clouds.yaml)."""
    if auth_type == "http_basic":
        return ks_session.Session(auth=http_basic.HTTPBasicAuth(
            endpoint=endpoint, username=username or "",
            password=password or ""))
    return ks_session.Session(auth=noauth.NoAuth(endpoint=endpoint))


class IronicClient:
    """The Ironic calls of the mirror and the broker backend."""

    def __init__(self, session: ks_session.Session,
                 endpoint: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        self._session = session
        self.endpoint = endpoint.rstrip("/") if endpoint else None
        self._service = remote.Service(
            "Ironic", SERVICE_TYPE, IronicUnavailable, self.endpoint,
            timeout=timeout, connect_retries=0,
            headers={"X-OpenStack-Ironic-API-Version": microversion_text()})

    # -- transport ------------------------------------------------------
    def request(self, method: str, path: str, json: object = None,
                params: Mapping[str, str] | Sequence[tuple[str, str]]
                | None = None,
                ok: Sequence[int] = (200, 201, 204)) -> Any:
        """One call; the decoded body (None when empty) or an exception."""
        answer = remote.call(self._session, self._service, method, path,
                             json, params)
        if answer.status not in ok:
            raise IronicError(method, path, answer.status,
                              error_message(answer.body, answer.text))
        return answer.body

    # -- versions -------------------------------------------------------
    def check_version(self) -> tuple[int, int]:
        """Ironic's maximum microversion; refuses one older than
        :data:`MICROVERSION`."""
        body = self.request("GET", "/")
        try:
            text = str(body["default_version"]["version"])
            major, _, minor = text.partition(".")
            maximum = (int(major), int(minor))
        except (TypeError, KeyError, ValueError) as exc:
            raise IronicError("GET", "/", 200,
                              "not an Ironic version document") from exc
        if maximum < MICROVERSION:
            raise IronicError(
                "GET", "/", 200,
                f"Ironic's maximum API version {text} is older than "
                f"{microversion_text()}, which the broker needs")
        return maximum

    # -- nodes ----------------------------------------------------------
    def nodes(self, **filters: str) -> Iterator[dict[str, Any]]:
        """Every node (detailed) matching ``filters``, page by page."""
        params: dict[str, str] = {"detail": "True", "limit": str(PAGE),
                                  **filters}
        while True:
            body = self.request("GET", "/v1/nodes", params=params)
            page = body.get("nodes") or []
            yield from page
            if len(page) < PAGE or not body.get("next"):
                return
            params["marker"] = str(page[-1]["uuid"])

    def node(self, ident: str) -> dict[str, Any] | None:
        """One node by UUID or name; None when Ironic has none."""
        try:
            node: dict[str, Any] = self.request(
                "GET", f"/v1/nodes/{urllib.parse.quote(ident, safe='')}")
        except IronicError as exc:
            if exc.status == 404:
                return None
            raise
        return node

    # -- allocations ----------------------------------------------------
    def create_allocation(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST an allocation (201: Ironic's conductor settles it
        asynchronously)."""
        created: dict[str, Any] = self.request(
            "POST", "/v1/allocations", json=dict(body), ok=(201,))
        return created

    def allocation(self, uuid: str) -> dict[str, Any] | None:
        """One allocation; None when Ironic has none of that UUID."""
        try:
            found: dict[str, Any] = self.request(
                "GET", f"/v1/allocations/{uuid}")
        except IronicError as exc:
            if exc.status == 404:
                return None
            raise
        return found

    def allocations(self) -> Iterator[dict[str, Any]]:
        """Every allocation, page by page."""
        params: dict[str, str] = {"limit": str(PAGE)}
        while True:
            body = self.request("GET", "/v1/allocations", params=params)
            page = body.get("allocations") or []
            yield from page
            if len(page) < PAGE or not body.get("next"):
                return
            params["marker"] = str(page[-1]["uuid"])

    def delete_allocation(self, uuid: str) -> bool:
        """DELETE an allocation: True when deleted, False when Ironic had
        none; :class:`IronicError` when Ironic refuses (its 409 names
        why)."""
        try:
            self.request("DELETE", f"/v1/allocations/{uuid}")
        except IronicError as exc:
            if exc.status == 404:
                return False
            raise
        return True
