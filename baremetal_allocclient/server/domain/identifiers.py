"""The shape of what clients name things by: UUIDs, names, traits, MAC
addresses (pure; Ironic's rules).

Used wherever an identifier arrives (handlers checking a body, services
looking something up, enrollment), so every path reads it the same way.
"""

from __future__ import annotations

import re
import uuid as uuidlib

import os_traits  # type: ignore[import-untyped]

NAME_RE = re.compile(r"^[A-Za-z0-9\-._~]+$")
NAME_MAX = 255
TRAIT_MAX = 255
# Like Ironic: a trait is a standard one from the os-traits catalogue or a
# custom one.
CUSTOM_TRAIT_PATTERN = f"^{os_traits.CUSTOM_NAMESPACE}[A-Z0-9_]+$"
STANDARD_TRAITS: frozenset[str] = frozenset(os_traits.get_traits())


def is_valid_trait(trait: object) -> bool:
    """Whether ``trait`` is a standard or a custom trait name."""
    return isinstance(trait, str) and len(trait) <= TRAIT_MAX and (
        trait in STANDARD_TRAITS
        or re.match(CUSTOM_TRAIT_PATTERN, trait) is not None
    )


def is_valid_name(value: object) -> bool:
    """Names: RFC 3986 unreserved characters, at most 255 of them."""
    return (
        isinstance(value, str)
        and len(value) <= NAME_MAX
        and NAME_RE.match(value) is not None
    )


def is_uuid(value: object) -> bool:
    """A canonical (hyphenated) UUID string."""
    if not isinstance(value, str) or len(value) != 36:
        return False
    try:
        return str(uuidlib.UUID(value)) == value.lower()
    except ValueError:
        return False


#: A UUID as ``str(uuid.UUID(...))`` writes it: what clients send back
#: and what is recognised without building a ``UUID``.
_CANONICAL_UUID = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def canonical_uuid(value: str) -> str:
    """A client's UUID as stored and compared: lower case, hyphenated
    (pure).  Databases differ in case sensitivity, so ``A1B2...`` and
    ``a1b2...`` must reach none of them as two values.  Anything not
    UUID-like (a name) is returned unchanged."""
    if _CANONICAL_UUID.fullmatch(value) or not is_uuid_like(value):
        return value
    return str(uuidlib.UUID(value))


def is_uuid_like(value: str) -> bool:
    """Identifiers that are looked up as UUIDs rather than names."""
    if _CANONICAL_UUID.fullmatch(value):
        return True
    try:
        uuidlib.UUID(value)
    except ValueError:
        return False
    return True


#: Ironic's (oslo.utils') MAC address rule: six colon-separated octets.
MAC_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")


def normalize_mac(value: object) -> str | None:
    """A MAC address as stored (lower case), None when it is not one
    (pure; Ironic accepts colon-separated octets only)."""
    if not isinstance(value, str) or MAC_RE.match(value.lower()) is None:
        return None
    return value.lower()
