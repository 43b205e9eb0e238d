"""HTTP errors: the exception handlers raise for one, and the one table
that answers a service's domain error with a status.

Handlers raise :class:`ApiError` for what is HTTP's own (a version that
lacks a field, a route not served, a malformed request); services raise
the domain's errors (``server/domain/errors.py``), which
:func:`as_api_error` turns into the same Ironic error body.  The
application calls it for every request, so no handler maps them.
"""

from __future__ import annotations

from baremetal_allocclient.server.domain import errors as domain

#: The status each domain error is answered with.
STATUS: dict[type[domain.DomainError], int] = {
    domain.Invalid: 400,
    domain.Forbidden: 403,
    domain.NotFound: 404,
    domain.Conflict: 409,
    domain.Busy: 503,
    domain.Gone: 410,
}


class ApiError(Exception):
    """An error answered in Ironic's format with the given status code."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    @property
    def faultcode(self) -> str:
        """Ironic's convention: 4xx are the client's fault."""
        return "Client" if self.status < 500 else "Server"


class RouteError(ApiError):
    """A path or method not served (at the requested version).

    Ironic's web framework answers these itself, in its other error shape
    (``{"code", "title", "description"}`` inside ``error_message``).
    """


def no_route() -> RouteError:
    """404 for a path not served at the requested version."""
    return RouteError(404, "Not Found")


def bad_request(message: str) -> ApiError:
    """400: the request itself is invalid."""
    return ApiError(400, message)


def not_found(message: str) -> ApiError:
    """404."""
    return ApiError(404, message)


def conflict(message: str) -> ApiError:
    """409: valid request, but the current state forbids it."""
    return ApiError(409, message)


def not_acceptable(message: str = "Request not acceptable.") -> ApiError:
    """406: a field or parameter the requested version does not have."""
    return ApiError(406, message)


def as_api_error(error: domain.DomainError) -> ApiError:
    """The HTTP error answering a domain error (its class's status)."""
    for kind in type(error).__mro__:
        status = STATUS.get(kind)
        if status is not None:
            return ApiError(status, error.message)
    return ApiError(500, error.message)
