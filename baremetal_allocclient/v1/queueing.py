"""Waiting in line for capacity, in the SDK: the server's queue
extension when it advertises one, retrying against Ironic otherwise.

The reference server advertises ``extensions.queue`` in ``GET /v1``;
the SDK then creates the allocation with ``"queue": {"timeout": N}``
(N: what is left of the call's time budget, so an abandoned entry
leaves the line by itself) and the
``X-Baremetal-Alloc-Extensions: queue`` header; the allocation stays
``allocating`` in a first-come-first-served line until a node is free.

Ironic has no line: an allocation without a node goes to ``error`` at
once.  The SDK then deletes it and creates it again after a pause with
backoff and full jitter, until the budget ends.  Whoever asks at the
right moment wins there: fairness is not guaranteed (:data:`UNFAIR`).
These are the pure decisions.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterator, Mapping
from typing import Any

from baremetal_allocclient import extension_names

#: Name of the extension (header value, ``GET /v1`` key).
EXTENSION = extension_names.QUEUE
#: Said once per call when waiting in line has to retry on the client.
UNFAIR = ("The server does not offer waiting in line (no queue "
          "extension): retrying on 'no available nodes' until the time "
          "budget ends; first come, first served is not guaranteed")
#: Backoff of the client-side retries: first pause, growth, ceiling.
FIRST_PAUSE = 1.0
GROWTH = 2.0
MAX_PAUSE = 15.0

# Ironic's and the reference server's words for "no node free right
# now" (conductor/allocations.py in Ironic); anything else (a bad trait,
# an unknown candidate node) is not worth waiting for.
_NO_CAPACITY = re.compile(
    r"no available nodes match"
    r"|none of the requested nodes are available"
    r"|no suitable nodes"
    r"|could not reserve any of \d+ suitable nodes"
    r"|all nodes were filtered out during reservation",
    re.IGNORECASE,
)


def advertised(doc: Any) -> float | None:
    """The longest wait the server grants when its ``GET /v1`` document
    advertises the queue extension in a version this SDK speaks; None
    when it does not (pure)."""
    if not isinstance(doc, Mapping):
        return None
    found = doc.get("extensions")
    entry = found.get(EXTENSION) if isinstance(found, Mapping) else None
    if not isinstance(entry, Mapping) or entry.get("version") != 1:
        return None
    ceiling = entry.get("max_timeout")
    if (isinstance(ceiling, bool) or not isinstance(ceiling, (int, float))
            or not math.isfinite(ceiling) or ceiling <= 0):
        return None
    return float(ceiling)


def queue_field(remaining: float | None, ceiling: float) -> dict[str, Any]:
    """The ``queue`` field of a create: wait what is left of the budget
    (whole seconds, at least 1), at most the server's ceiling."""
    if remaining is None:
        return {"timeout": ceiling}
    return {"timeout": max(1, min(math.ceil(remaining), int(ceiling)))}


def is_capacity_failure(last_error: str | None) -> bool:
    """Whether an allocation failed only because no node was free."""
    return bool(last_error and _NO_CAPACITY.search(last_error))


def pauses(rng: random.Random) -> Iterator[float]:
    """Pauses before each retry: exponential backoff with full jitter
    (uniform between 0 and the backoff), so clients that failed together
    do not come back together."""
    ceiling = FIRST_PAUSE
    while True:
        yield rng.uniform(0, ceiling)
        ceiling = min(ceiling * GROWTH, MAX_PAUSE)


def position(raw: Mapping[str, Any]) -> int | None:
    """The place in line the server reported for an allocation (None
    when it is not waiting in line or the server did not say)."""
    queue = raw.get("queue")
    if not isinstance(queue, Mapping):
        return None
    value = queue.get("position")
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value
