"""One error hierarchy shared by the SDK and the CLI.

Every error the SDK raises on purpose derives from :class:`ClientError`, so a
caller (or the CLI's top-level handler) can catch one class and still tell
the cases apart by type.  HTTP errors carry the status code, the server's own
message (parsed out of Ironic's nested error body, see
:func:`parse_error_body`) and the request id the server logged, because those
three are what an operator needs to find the failure in the server's logs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from baremetal_allocclient.base_errors import (
    ClientError,
    InvalidArgument,
    InvalidResponse,
)

if TYPE_CHECKING:  # pragma: no cover - only for type hints
    from baremetal_allocclient.v1.resources import Allocation

__all__ = [
    "AllocationFailed",
    "BadRequest",
    "ClientError",
    "ConfigurationError",
    "Conflict",
    "ConnectionFailed",
    "DeadlineExceeded",
    "ExtensionNotSupported",
    "Forbidden",
    "Gone",
    "HttpError",
    "InvalidArgument",
    "InvalidResponse",
    "MethodNotAllowed",
    "NotAcceptable",
    "NotFound",
    "ServerError",
    "ServiceUnavailable",
    "Terminated",
    "Unauthorized",
    "VersionNotSupported",
    "WaitTimeout",
    "from_response",
    "parse_error_body",
]


class ConfigurationError(ClientError):
    """The cloud configuration (clouds.yaml, ``OS_*`` variables) is unusable.

    Raised by ``Client.from_cloud`` when openstacksdk's config loader or the
    authentication plugin it selects cannot build a session.
    """


class ConnectionFailed(ClientError):
    """The endpoint could not be reached (refused, DNS, TLS, timeout).

    The message always names the endpoint, because "connection refused"
    without the URL is the most common unanswerable support question.
    """

    def __init__(self, endpoint: str, reason: str, *,
                 service: str = "bare metal API") -> None:
        self.endpoint = endpoint
        self.reason = reason
        super().__init__(f"Unable to reach the {service} at {endpoint}: "
                         f"{reason}")


class DeadlineExceeded(ClientError):
    """An operation's time budget ran out before a request could finish.

    Raised by the transport when a request would start after the deadline
    or got no answer before it.  The waits turn it into
    :class:`WaitTimeout`; a create that ends this way may still have been
    made by the server, under the UUID the client chose.
    """

    def __init__(self, method: str, url: str) -> None:
        self.method = method
        self.url = url
        super().__init__(
            f"No answer to {method} {url} within the time limit"
        )


class ExtensionNotSupported(ClientError):
    """The server lacks an extension of baremetal-alloc-server that the
    call needs (real Ironic has none of them)."""


class Terminated(BaseException):
    """The process received SIGTERM during an operation that cleans up.

    A BaseException, like KeyboardInterrupt, so ``except Exception`` does
    not swallow it.  See :mod:`baremetal_allocclient.v1.interrupts`.
    """

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"terminated by signal {signum}")


class HttpError(ClientError):
    """The server answered with an HTTP error status.

    Attributes:
        status_code: the HTTP status code.
        message: the server's own explanation (Ironic's ``faultstring``),
            or the HTTP reason phrase when the body had none.
        request_id: the ``x-openstack-request-id`` response header, if any.
        method, url: the request that failed.
        details: the decoded error document, for callers that want more.
        retried: True when the request was sent more than once, so an
            earlier attempt may have taken effect (see
            :meth:`Client.create_allocation`).
    """

    status_code: int = 0
    retried: bool = False

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        request_id: str | None = None,
        method: str | None = None,
        url: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        if status_code is not None:
            self.status_code = status_code
        self.message = message
        self.request_id = request_id
        self.method = method
        self.url = url
        self.details = details
        super().__init__(message)

    def __str__(self) -> str:
        status = f"HTTP {self.status_code}"
        if self.status_code == 404 and self.url:
            # A wrong endpoint path and a missing allocation look alike;
            # the URL tells them apart.
            status += f" for {self.method or 'request'} {self.url}"
        text = f"{self.message} ({status})"
        if self.request_id:
            text += f" (Request-ID: {self.request_id})"
        return text


class BadRequest(HttpError):
    """HTTP 400: the server rejected the request's content."""

    status_code = 400


class Unauthorized(HttpError):
    """HTTP 401: missing or invalid credentials."""

    status_code = 401


class Forbidden(HttpError):
    """HTTP 403: the credentials do not allow this operation."""

    status_code = 403


class NotFound(HttpError):
    """HTTP 404: the allocation or node does not exist (or is hidden)."""

    status_code = 404


class MethodNotAllowed(HttpError):
    """HTTP 405: the endpoint does not support this method."""

    status_code = 405


class NotAcceptable(HttpError):
    """HTTP 406 that is not about the API version (e.g. a field too new)."""

    status_code = 406


class Conflict(HttpError):
    """HTTP 409: a name/UUID clash or a node in the wrong state."""

    status_code = 409


class Gone(HttpError):
    """HTTP 410: a watch's cursor is out of the server's change log (older
    than its retention): list again and watch from the list's cursor."""

    status_code = 410


class ServerError(HttpError):
    """HTTP 5xx: the server failed to process the request."""

    status_code = 500


class ServiceUnavailable(ServerError):
    """HTTP 503: the server is temporarily unable to answer (retried)."""

    status_code = 503


class VersionNotSupported(ClientError):
    """The server's API version range does not include what a call needs.

    Attributes:
        feature: what was attempted, e.g. ``"updating allocations"``.
        required: the lowest API version the feature needs.
        server_min, server_max: the server's advertised range, if known.
        requested: the pinned version, when a pin is the problem.
    """

    def __init__(
        self,
        feature: str,
        required: tuple[int, int] | None,
        *,
        server_min: tuple[int, int] | None = None,
        server_max: tuple[int, int] | None = None,
        requested: tuple[int, int] | None = None,
    ) -> None:
        self.feature = feature
        self.required = required
        self.server_min = server_min
        self.server_max = server_max
        self.requested = requested
        super().__init__(self._describe())

    def _describe(self) -> str:
        parts = []
        if self.required is not None:
            parts.append(
                f"{self.feature} requires bare metal API version "
                f"{_fmt(self.required)} or newer"
            )
        else:
            parts.append(f"{self.feature} is not supported")
        if self.requested is not None:
            parts.append(f"the client is pinned to {_fmt(self.requested)}")
        if self.server_max is not None:
            low = _fmt(self.server_min) if self.server_min else "?"
            parts.append(
                f"the server supports {low} to {_fmt(self.server_max)}"
            )
        return "; ".join(parts)


class AllocationFailed(ClientError):
    """An allocation ended in the ``error`` state.

    Attributes:
        allocation: the failed allocation as last read from the server.
        last_error: the server's explanation (``allocation.last_error``).
        results: for ``wait_for_allocations``, every allocation's final
            state, so the caller can release the ones that succeeded.
    """

    def __init__(
        self,
        allocation: Allocation,
        last_error: str | None,
        *,
        results: Sequence[Allocation] = (),
    ) -> None:
        self.allocation = allocation
        self.last_error = last_error
        self.results = tuple(results)
        ident = allocation.name or allocation.uuid
        super().__init__(
            f"Allocation {ident} failed: {last_error or 'no reason given'}"
        )


class GroupFailed(ClientError):
    """An all-or-nothing group could not be reserved; nothing of it is
    kept (see :meth:`Client.allocate_group`).

    Attributes:
        reason: why, naming the member that failed and its last_error
            (or the server's explanation).
        failed: the member that failed, as last read, if one did.
        left: ``(uuid, why)`` of members that could not be deleted
            (empty when the roll-back was complete).
        rolled_back: False when the server created nothing (the
            groups extension), so nothing had to be deleted.
    """

    def __init__(
        self,
        reason: str,
        *,
        failed: Allocation | None = None,
        left: Sequence[tuple[str, str]] = (),
        rolled_back: bool = True,
    ) -> None:
        self.reason = reason
        self.failed = failed
        self.left = tuple(left)
        if self.left:
            kept = "; ".join(f"{uuid} ({why})" for uuid, why in self.left)
            tail = f"; could NOT delete: {kept}"
        elif rolled_back:
            tail = "; every allocation made for it was deleted"
        else:
            tail = ""
        super().__init__(reason + tail)


class WaitTimeout(ClientError):
    """Waiting gave up before the allocation(s) left ``allocating``.

    Attributes:
        allocations: the unfinished allocations as last seen.
        timeout: the timeout in seconds that expired.
        last_state: the last seen state of the first unfinished one.
        results: for ``wait_for_allocations``, every allocation's last seen
            state (finished or not).
    """

    def __init__(
        self,
        allocations: Sequence[Allocation],
        timeout: float,
        *,
        results: Sequence[Allocation] = (),
    ) -> None:
        self.allocations = tuple(allocations)
        self.timeout = timeout
        self.results = tuple(results)
        first = self.allocations[0] if self.allocations else None
        self.last_state = first.state if first is not None else None
        if first is None:
            what = "allocations"
        elif len(self.allocations) == 1:
            ident = first.name or first.uuid
            what = f"allocation {ident} (last state: {self.last_state})"
        else:
            idents = ", ".join(
                str(a.name or a.uuid) for a in self.allocations[:3]
            )
            more = len(self.allocations) - 3
            if more > 0:
                idents += f" and {more} more"
            what = f"{len(self.allocations)} allocations ({idents})"
        super().__init__(f"Timed out after {timeout:g} s waiting for {what}")


_STATUS_CLASSES: dict[int, type[HttpError]] = {
    cls.status_code: cls
    for cls in (
        BadRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        MethodNotAllowed,
        NotAcceptable,
        Conflict,
        Gone,
        ServiceUnavailable,
    )
}


def error_class(status_code: int) -> type[HttpError]:
    """Return the exception class for an HTTP error status."""
    try:
        return _STATUS_CLASSES[status_code]
    except KeyError:
        return ServerError if status_code >= 500 else HttpError


def _from_mapping(doc: Mapping[str, Any]) -> str | None:
    """Extract a message from one decoded error document."""
    for key in ("faultstring", "description", "detail", "message", "title"):
        value = doc.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def parse_error_body(body: str | bytes | None) -> tuple[str | None, Any]:
    """Return ``(message, decoded document)`` from an error response body.

    Ironic wraps its error in ``{"error_message": "<JSON string>"}`` where the
    inner string decodes to ``{"faultcode", "faultstring", "debuginfo"}`` or,
    for a few version errors, ``{"code", "title", "description"}``.  Other
    front ends answer with ``{"error": {...}}``, ``{"errors": [...]}`` or
    plain text.  The message is ``None`` when nothing readable was found.
    """
    if body is None:
        return None, None
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    text = text.strip()
    if not text:
        return None, None
    try:
        doc: Any = json.loads(text)
    except ValueError:
        # Plain text or HTML: keep it short, it goes into one error line.
        return text.splitlines()[0][:500], None
    return _message_from_doc(doc), doc


def _message_from_doc(doc: Any) -> str | None:
    if isinstance(doc, str):
        try:
            inner = json.loads(doc)
        except ValueError:
            return doc.strip() or None
        return _message_from_doc(inner)
    if isinstance(doc, list):
        for item in doc:
            found = _message_from_doc(item)
            if found:
                return found
        return None
    if not isinstance(doc, Mapping):
        return None
    for key in ("error_message", "error", "errors"):
        if key in doc:
            found = _message_from_doc(doc[key])
            if found:
                return found
    return _from_mapping(doc)


def from_response(
    status_code: int,
    body: str | bytes | None,
    *,
    reason: str | None = None,
    request_id: str | None = None,
    method: str | None = None,
    url: str | None = None,
) -> HttpError:
    """Build the typed exception for one HTTP error response."""
    message, doc = parse_error_body(body)
    if not message:
        message = reason or f"HTTP error {status_code}"
    details = doc if isinstance(doc, Mapping) else None
    cls = error_class(status_code)
    return cls(
        message,
        status_code=status_code,
        request_id=request_id,
        method=method,
        url=url,
        details=details,
    )


def _fmt(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


class NoMatchingNodes(ClientError):
    """No node passes the request's constraints: raised before anything
    is created (client-side selection against Ironic).

    Attributes:
        funnel: the ``explain`` document (steps with counts, the first
            step that left no node).
    """

    def __init__(self, message: str, funnel: dict[str, Any]) -> None:
        self.funnel = funnel
        super().__init__(message)
