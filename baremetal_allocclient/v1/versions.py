"""Bare metal API microversions: constants and pure negotiation decisions.

Ironic versions every request with the ``X-OpenStack-Ironic-API-Version``
header and announces its supported range in the
``X-OpenStack-Ironic-API-Minimum-Version`` / ``-Maximum-Version`` headers of
every ``/v1`` response.  A version outside that range is answered with 406.
The functions here decide, without I/O, which version to send and what to do
with a 406; ``transport.py`` performs the requests.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from baremetal_allocclient import exceptions

Version = tuple[int, int]

#: Highest version this client understands: 1.60 brings allocation owners,
#: 1.65 the node ``lessee``; nothing between changes allocations.  Kept no
#: higher than needed, because a server older than this maximum costs the
#: optimistic first request a 406 and one retry.
CLIENT_MAX_VERSION: Version = (1, 65)

#: Headers Ironic uses to announce its range and the version it served.
MIN_VERSION_HEADER = "X-OpenStack-Ironic-API-Minimum-Version"
MAX_VERSION_HEADER = "X-OpenStack-Ironic-API-Maximum-Version"
VERSION_HEADER = "X-OpenStack-Ironic-API-Version"


@dataclasses.dataclass(frozen=True)
class Feature:
    """An API capability and the lowest version that provides it."""

    description: str
    min_version: Version


NODES = Feature("reading nodes", (1, 1))
ALLOCATIONS = Feature("the allocation API", (1, 52))
ALLOCATION_UPDATE = Feature("updating allocations", (1, 57))
ALLOCATION_BACKFILL = Feature("backfilling an allocation (node)", (1, 58))
ALLOCATION_OWNER = Feature("allocation owners (owner)", (1, 60))

_VERSION_RE = re.compile(r"^\s*(\d+)\.(\d+)\s*$")


def parse_version(value: str) -> Version:
    """Parse ``"1.60"`` into ``(1, 60)``; raise InvalidArgument otherwise."""
    match = _VERSION_RE.match(value)
    if match is None:
        raise exceptions.InvalidArgument(
            f"Invalid API version {value!r}: expected MAJOR.MINOR, "
            "e.g. 1.60, or 'latest'"
        )
    return int(match.group(1)), int(match.group(2))


def format_version(version: Version) -> str:
    """Format ``(1, 60)`` as ``"1.60"``."""
    return f"{version[0]}.{version[1]}"


def parse_pin(value: str | Version | None) -> Version | None:
    """Turn a user's ``api_version`` into a pin, or ``None`` to negotiate.

    ``None``, ``"latest"`` and ``"1"`` mean "the highest version both sides
    support".  A pin above :data:`CLIENT_MAX_VERSION` is rejected: the client
    could not parse what such a version returns.
    """
    if value is None:
        return None
    if isinstance(value, tuple):
        pin = value
    else:
        text = value.strip().lower()
        if text in ("latest", "1", ""):
            return None
        pin = parse_version(text)
    if pin[0] != 1 or pin > CLIENT_MAX_VERSION:
        raise exceptions.InvalidArgument(
            f"API version {format_version(pin)} is not supported by this "
            f"client (1.1 to {format_version(CLIENT_MAX_VERSION)})"
        )
    return pin


def range_from_headers(
    headers: Mapping[str, str],
) -> tuple[Version, Version] | None:
    """Read the server's ``(min, max)`` from response headers, if present."""
    low = headers.get(MIN_VERSION_HEADER)
    high = headers.get(MAX_VERSION_HEADER)
    if not low or not high:
        return None
    try:
        return parse_version(low), parse_version(high)
    except exceptions.InvalidArgument:
        return None


def range_from_document(doc: Any) -> tuple[Version, Version] | None:
    """Read ``(min, max)`` from the root (``/``) or ``/v1`` document.

    The root lists ``versions`` (and ``default_version``); ``/v1`` carries a
    ``version`` object.  Each has ``min_version`` and ``version``.
    """
    if not isinstance(doc, Mapping):
        return None
    candidates: list[Any] = []
    if isinstance(doc.get("default_version"), Mapping):
        candidates.append(doc["default_version"])
    if isinstance(doc.get("versions"), list):
        candidates.extend(doc["versions"])
    if isinstance(doc.get("version"), Mapping):
        candidates.append(doc["version"])
    for entry in candidates:
        if not isinstance(entry, Mapping):
            continue
        if entry.get("id") not in (None, "v1"):
            continue
        low, high = entry.get("min_version"), entry.get("version")
        if isinstance(low, str) and isinstance(high, str):
            try:
                return parse_version(low), parse_version(high)
            except exceptions.InvalidArgument:
                continue
    return None


def choose_version(
    server_range: tuple[Version, Version] | None,
    *,
    client_max: Version = CLIENT_MAX_VERSION,
) -> Version:
    """Return the version to send: the highest both sides support.

    Without a known server range the client optimistically sends its own
    maximum; a server that is older answers 406 and tells its range.
    """
    if server_range is None:
        return client_max
    return min(client_max, server_range[1])


def check_feature(
    feature: Feature,
    version: Version,
    *,
    server_range: tuple[Version, Version] | None,
    pinned: Version | None,
) -> None:
    """Raise VersionNotSupported when ``version`` is too old for a feature."""
    if version >= feature.min_version:
        return
    raise exceptions.VersionNotSupported(
        feature.description,
        feature.min_version,
        server_min=server_range[0] if server_range else None,
        server_max=server_range[1] if server_range else None,
        requested=pinned,
    )


def is_version_rejection(
    requested: Version, server_range: tuple[Version, Version] | None
) -> bool:
    """Tell whether a 406 rejected the version rather than the content.

    Ironic also answers 406 for, e.g., a field that is too new for the
    requested version; that is a plain NotAcceptable, not a reason to
    renegotiate.  Without a known range we assume the version is at fault.
    """
    if server_range is None:
        return True
    low, high = server_range
    return not (low <= requested <= high)
