"""Parse the ``--os-baremetal-api-version`` value (pure)."""

from __future__ import annotations

import re

_VERSION_RE = re.compile(r"^1\.(0|[1-9][0-9]*)$")


class InvalidApiVersion(ValueError):
    """The requested API version is neither "latest", "1" nor "1.N"."""


def parse_api_version(value: str | None) -> tuple[int, int] | None:
    """Return ``(1, N)`` for "1.N", or None for "latest"/"1"/unset.

    None lets the SDK negotiate the newest version both sides support.
    """
    if value is None:
        return None
    text = value.strip().lower()
    if text in ("", "latest", "1"):
        return None
    match = _VERSION_RE.match(text)
    if match is None:
        raise InvalidApiVersion(
            f"invalid Bare Metal API version {value!r}: "
            "expected 'latest', '1' or '1.N'"
        )
    return (1, int(match.group(1)))
