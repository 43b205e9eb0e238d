"""The root of the error hierarchy, below everything that raises it.

:mod:`baremetal_allocclient.exceptions` re-exports these classes (import
them from there): they live here so that the resource parsers, which raise
them, sit below the exceptions that carry parsed resources.
"""

from __future__ import annotations

#: The classes keep the module their users import them from.
_PUBLIC_MODULE = "baremetal_allocclient.exceptions"


class ClientError(Exception):
    """Base class of every error raised on purpose by this package.

    ``outcome_unknown`` is True when the request that failed may still
    have been applied by the server: an attempt was sent and got no
    answer (a timeout, a connection lost after sending) or a 5xx.  It is
    False when the server clearly refused every attempt (a 4xx) or none
    reached it (connection refused, nothing sent before the deadline).
    """

    __module__ = _PUBLIC_MODULE
    outcome_unknown: bool = False


class InvalidArgument(ClientError, ValueError):
    """A caller passed a value the SDK can reject without asking a server."""

    __module__ = _PUBLIC_MODULE


class InvalidResponse(ClientError):
    """The server answered, but not with what the Ironic API promises."""

    __module__ = _PUBLIC_MODULE

    def __init__(
        self, message: str, *, status_code: int | None = None
    ) -> None:
        self.status_code = status_code
        super().__init__(message)
