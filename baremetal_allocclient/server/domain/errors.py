"""The errors a service raises: a small set of domain outcomes.

Services take plain values and answer in the domain's words; they never
choose an HTTP status.  ``api/errors.py`` maps each class here to the
status and the error body Ironic answers with (one table, used by the
application for every request).  The message is shown to the client,
so it never holds exception text or SQL.
"""

from __future__ import annotations


class DomainError(Exception):
    """A request the domain refuses; ``message`` is for the client."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Invalid(DomainError):
    """The request itself is wrong (a bad value, a mismatch): 400."""


class Forbidden(DomainError):
    """The principal may not do this: 403."""


class NotFound(DomainError):
    """What the request names does not exist, or is hidden from the
    principal: 404."""


class Conflict(DomainError):
    """A valid request the current state forbids (taken, in use, in the
    wrong state): 409."""


class Busy(DomainError):
    """No capacity for the request now; retrying later may succeed: 503."""


class Gone(DomainError):
    """What the request names existed but is no longer kept (a watch
    cursor older than the change log's retention): 410."""
