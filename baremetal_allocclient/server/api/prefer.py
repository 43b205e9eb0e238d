"""The ``Prefer: wait`` request preference (RFC 7240, section 4.3).

A client that is going to poll a new allocation until it settles can
instead ask ``POST /v1/allocations`` to answer once the allocation is
``active`` or ``error``, up to N seconds: one round trip instead of a
create and a series of polls.  Without the header the server answers at
once with ``allocating``, exactly like Ironic; Ironic ignores the header,
so clients may always send it.

Unknown or malformed preferences are ignored, as the RFC asks.
``respond-async`` in the same header wins over ``wait``.  At most half
of the request threads wait at a time (``allocation/wait_permits.py``);
beyond that a create is answered at once, as without the header.
"""

from __future__ import annotations

from collections.abc import Iterable

from baremetal_allocclient.server.api import numbers

#: Default request threads of ``serve`` (``--threads``).  Threads held
#: by a wait cost no database connection and little memory; 64 lets 32
#: clients wait at once while 32 threads stay free for everything else.
DEFAULT_THREADS = 64
#: Default ceiling of a ``wait`` preference, in seconds (``serve
#: --max-prefer-wait``): a waiting request holds one HTTP thread.
DEFAULT_MAX_WAIT = 10.0


def _preferences(headers: Iterable[str]) -> dict[str, str]:
    """Lower-cased preference name -> value ("" when it has none).

    Parameters after ``;`` are dropped: ``wait`` and ``respond-async``
    define none.  The first occurrence of a preference wins.
    """
    found: dict[str, str] = {}
    for header in headers:
        for item in header.split(","):
            token = item.split(";", 1)[0].strip()
            if not token:
                continue
            name, _sep, value = token.partition("=")
            name = name.strip().lower()
            found.setdefault(name, value.strip().strip('"'))
    return found


def requested_wait(headers: Iterable[str], ceiling: float) -> float:
    """Seconds to hold the response for ``Prefer`` headers; 0: answer now.

    ``wait`` takes whole seconds (the RFC's delta-seconds) and is capped at
    ``ceiling``, however many digits it has; anything else is ignored.
    """
    preferences = _preferences(headers)
    if "respond-async" in preferences:
        return 0.0
    value = preferences.get("wait", "")
    if not (value.isascii() and value.isdigit()):  # delta-seconds only
        return 0.0
    ceiling = max(ceiling, 0.0)
    try:
        seconds = numbers.integer(value, "Prefer: wait")
    except numbers.OutOfRange:  # more seconds than anyone waits
        return ceiling
    return min(float(seconds), ceiling)
