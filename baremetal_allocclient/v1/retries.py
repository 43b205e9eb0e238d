"""Which failures are transient, and how long to wait before retrying.

Pure decisions, so the policy is table-testable.  Only failures that say
"try again later" are retried: 503, a refused connection (the request never
reached the server, so even a POST is safe to repeat) and Ironic's 409
"node is locked" (a conductor holds the node for a moment).  Every other 409
(name or UUID in use, node in the wrong state) is deterministic and is
raised at once.  A 500 is not retried because a POST may have taken
effect, with one exception: Ironic on SQLite answers a write that met
another's lock with a 500 saying "database is locked", which a ``GET``,
``HEAD`` or ``DELETE`` repeats (a ``DELETE`` that did take effect is
then a 404, which a release ignoring missing allocations takes as done).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator

_LOCKED_RE = re.compile(r"\bis locked\b|\block(ed)? by\b", re.IGNORECASE)
_DATABASE_LOCKED = "database is locked"  # SQLite's own words
_REPEATABLE = frozenset({"GET", "HEAD", "DELETE"})


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """Bounded retry budget with exponential backoff.

    Attributes:
        max_retries: extra attempts after the first one (0 disables).
        initial_delay: seconds before the first retry.
        max_delay: cap of any single delay, also for ``Retry-After``.
    """

    max_retries: int = 3
    initial_delay: float = 0.25
    max_delay: float = 2.0

    def delays(self) -> Iterator[float]:
        """Yield the delay before each retry; exhausts with the budget."""
        delay = self.initial_delay
        for _ in range(self.max_retries):
            yield min(delay, self.max_delay)
            delay *= 2


NO_RETRIES = RetryPolicy(max_retries=0)


def is_transient_status(status_code: int, message: str | None,
                        method: str = "POST") -> bool:
    """Tell whether an HTTP error to a ``method`` request is worth
    retrying unchanged."""
    if status_code == 503:
        return True
    if status_code == 409:
        return bool(message and _LOCKED_RE.search(message))
    if status_code == 500 and method.upper() in _REPEATABLE:
        return bool(message and _DATABASE_LOCKED in message)
    return False


def retry_after(value: str | None, policy: RetryPolicy) -> float | None:
    """Parse a ``Retry-After`` header given in seconds, capped by policy."""
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None  # HTTP-date form: fall back to our own schedule.
    if seconds < 0:
        return None
    return min(seconds, policy.max_delay)
