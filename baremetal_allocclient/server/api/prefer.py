"""The ``Prefer: wait`` request preference (RFC 7240, section 4.3).

A client that is going to poll a new allocation until it settles can
instead ask ``POST /v1/allocations`` to answer once the allocation is
``active`` or ``error``, up to N seconds: one round trip instead of a
create and a series of polls.  Without the header the server answers at
once with ``allocating``, exactly like Ironic; Ironic ignores the header,
so clients may always send it.

Unknown or malformed preferences are ignored, as the RFC asks.
``respond-async`` in the same header wins over ``wait``.
"""

from __future__ import annotations

from collections.abc import Iterable

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
    ``ceiling``.
    """
    preferences = _preferences(headers)
    if "respond-async" in preferences:
        return 0.0
    value = preferences.get("wait", "")
    if not value.isascii() or not value.isdigit():
        return 0.0
    return min(float(int(value)), max(ceiling, 0.0))
