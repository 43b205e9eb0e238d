"""The hardware interfaces of a fake-hardware node.

Each ``*_interface`` field of a node names one implementation.  The
reference server serves the ``fake-hardware`` hardware type only, and of
the implementations Ironic 39's ``fake-hardware`` supports it accepts
those it can honour without outside services: the fake ones, ``noop``,
and the ``no-*`` ones, which (as Ironic's ``noop`` module) fail
validation and refuse the actions of their interface.  The contract
suite's Ironic enables the same sets (tests/functional/targets.py), so
both targets accept and refuse the same values.
"""

from __future__ import annotations

from typing import Any, NamedTuple

FAKE = "fake"
NOOP = "noop"


class Interface(NamedTuple):
    """One ``*_interface`` field."""

    #: Ironic's interface type (the entry point group's last part).
    kind: str
    #: The value a new node gets.
    default: str
    #: Every accepted value, in Ironic's order of "Valid interfaces".
    accepted: tuple[str, ...]
    #: The API minor version that introduced the field.
    since: int


def _iface(kind: str, since: int, *others: str,
           default: str = FAKE) -> tuple[str, Interface]:
    accepted = (default, *others)
    return f"{kind}_interface", Interface(kind, default, accepted, since)


#: field name -> Interface, in the order the node document lists them.
INTERFACES: dict[str, Interface] = dict((
    _iface("bios", 40, "no-bios"),
    _iface("boot", 31),
    _iface("console", 31, "no-console"),
    _iface("deploy", 31),
    _iface("inspect", 31, "no-inspect"),
    _iface("management", 31),
    _iface("network", 20, default=NOOP),
    _iface("power", 31),
    _iface("raid", 31, "no-raid"),
    _iface("rescue", 38, "no-rescue"),
    _iface("storage", 33, FAKE, default=NOOP),
    _iface("firmware", 86, "no-firmware"),
    _iface("vendor", 31, "no-vendor"),
))

#: The interface types GET /v1/nodes/{id}/validate reports, in Ironic's
#: order: the core interfaces, then the optional ones (every one but
#: vendor, at every API version).
VALIDATED = ("boot", "deploy", "management", "network", "power",
             "bios", "console", "firmware", "inspect", "raid", "rescue",
             "storage")


def invalid_value(field: str, value: Any) -> str | None:
    """Ironic's message for an implementation it does not accept, or
    None when ``value`` is accepted (or not given)."""
    iface = INTERFACES[field]
    if value is None or value in iface.accepted:
        return None
    return (f"Could not find the following interface in the "
            f"'ironic.hardware.interfaces.{iface.kind}' entrypoint: "
            f"{value}. Valid interfaces are {list(iface.accepted)}.")


def is_unsupported(value: str) -> bool:
    """True for the ``no-*`` implementations, which fail validation."""
    return value.startswith("no-")


def unsupported_message(driver: str, kind: str) -> str:
    """Ironic's UnsupportedDriverExtension message."""
    return (f"Driver {driver} does not support {kind} (disabled or not "
            f"implemented).")


def value_of(node: Any, field: str) -> str:
    """The node's implementation of ``field`` (NULL is the default)."""
    value = getattr(node, field, None)
    return value if value else INTERFACES[field].default
