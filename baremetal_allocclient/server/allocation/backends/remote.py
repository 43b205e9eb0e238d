"""Calls to the service a backend fronts (Placement, Ironic): one
transport over a keystoneauth1 session, one meaning of "unreachable",
and one patience while it is.

A service is *unreachable* when the connection fails or times out, the
catalog has no endpoint for it, or it answers 502, 503 or 504: the
caller's ``unreachable`` exception is raised, with the method and path.
Any other answer is returned as it is (:class:`Answer`); which statuses
are errors is the caller's to say.
"""

from __future__ import annotations

import logging
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session

LOG = logging.getLogger(__name__)
#: Pause between two attempts while the service is unreachable.
UNREACHABLE_PAUSE: Final = 0.5
_UNREACHABLE_STATUS = frozenset({502, 503, 504})
_CONNECTION_FAILURES = (
    ks_exc.ConnectFailure, ks_exc.ConnectTimeout, ks_exc.RequestTimeout,
    ks_exc.UnknownConnectionError, ks_exc.EndpointNotFound)

T = TypeVar("T")


@dataclass(frozen=True)
class Service:
    """Where a service is and how to call it."""

    name: str  # in messages: "Ironic", "Placement"
    service_type: str
    unreachable: type[Exception]
    endpoint: str | None = None  # None: the session's catalog
    interface: str = "public"
    region_name: str | None = None
    timeout: float = 30.0
    connect_retries: int | None = None  # None: keystoneauth's default
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Answer:
    """A service's answer: status, decoded JSON body (None when empty or
    not JSON) and the start of its text."""

    status: int
    body: Any
    text: str


def call(session: ks_session.Session, service: Service, method: str,
         path: str, json: object = None,
         params: Mapping[str, str] | Sequence[tuple[str, str]]
         | None = None) -> Answer:
    """One request to ``service``; ``service.unreachable`` when it is."""
    url = path + ("?" + urllib.parse.urlencode(params) if params else "")
    kwargs: dict[str, Any] = {
        "headers": {"Accept": "application/json", **service.headers},
        "raise_exc": False,
        "timeout": service.timeout,
        "endpoint_filter": {"service_type": service.service_type,
                            "interface": service.interface,
                            "region_name": service.region_name},
    }
    if service.connect_retries is not None:
        kwargs["connect_retries"] = service.connect_retries
    if service.endpoint:
        kwargs["endpoint_override"] = service.endpoint
    if json is not None:
        kwargs["json"] = json
    try:
        response = session.request(url, method, **kwargs)
    except _CONNECTION_FAILURES as exc:
        # keystoneauth's text (URLs, socket errors) stays in the log; the
        # message may reach a client (an allocation's last_error).
        LOG.debug("%s %s %s: %s", service.name, method, path, exc)
        raise service.unreachable(
            f"{service.name} is unreachable ({method} {path})") from exc
    if response.status_code in _UNREACHABLE_STATUS:
        raise service.unreachable(
            f"{service.name} answered {response.status_code} to {method} "
            f"{path}")
    body: Any = None
    if response.content:
        try:
            body = response.json()
        except ValueError:
            body = None
    return Answer(response.status_code, body, response.text[:300])


class StillUnreachable(Exception):
    """The service stayed unreachable for the whole wait; ``cause`` is
    the last attempt's exception."""

    def __init__(self, cause: Exception, waited: float) -> None:
        super().__init__(f"unreachable (waited {waited:g} s): {cause}")
        self.cause = cause
        self.waited = waited


def patiently(attempt: Callable[[], T], unreachable: type[Exception],
              wait: float) -> T:
    """``attempt()``, again every :data:`UNREACHABLE_PAUSE` while it
    raises ``unreachable``, for at most ``wait`` seconds; then
    :class:`StillUnreachable`."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return attempt()
        except unreachable as exc:
            if time.monotonic() >= deadline:
                raise StillUnreachable(exc, wait) from exc
            time.sleep(UNREACHABLE_PAUSE)
