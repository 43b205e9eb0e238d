"""Argument types and checks of the allocation commands (pure).

Everything that can be decided from the command line alone is decided here,
as argparse ``type=`` callables or small checks returning an error message,
so that bad input is a usage error (exit code 2) before any request is made.
"""

from __future__ import annotations

import argparse
import datetime
import math
import re
from collections.abc import Iterable, Sequence

from baremetal_allocclient import leases

_SORT_DIRECTIONS = ("asc", "desc")
#: Allocation states (the SDK's resources.ALLOCATION_STATES; repeated here
#: because OpenStackClient imports this module on every run).
ALLOCATION_STATES = ("allocating", "active", "error")
#: What a trait looks like: a standard trait from os-traits (capitals,
#: digits and underscores) or CUSTOM_ followed by the same.
_TRAIT_RE = re.compile(r"^[A-Z][A-Z0-9_]{0,254}$")
TRAIT_RULE = (
    "a trait is a standard trait from os-traits (e.g. HW_CPU_X86_AVX2) or "
    "a custom one: CUSTOM_ followed by capital letters, digits and "
    "underscores (e.g. CUSTOM_GPU)"
)


def key_value(text: str) -> tuple[str, str]:
    """``--extra key=value`` -> ``(key, value)``; the value may contain '='."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(
            f"expected KEY=VALUE, got {text!r}"
        )
    return key.strip(), value


def non_empty(text: str) -> str:
    """Reject empty identifiers and names (they would address nothing)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def trait(text: str) -> str:
    """``--trait``: upper case, as Ironic and os-traits spell traits."""
    if not _TRAIT_RE.match(text) or text == "CUSTOM_":
        raise argparse.ArgumentTypeError(
            f"{text!r} is not valid: {TRAIT_RULE}"
        )
    return text


def allocation_state(text: str) -> str:
    """``list --state``: one of the allocation states."""
    if text not in ALLOCATION_STATES:
        raise argparse.ArgumentTypeError(
            f"invalid state {text!r}; choose from "
            + ", ".join(ALLOCATION_STATES)
        )
    return text


def positive_int(text: str) -> int:
    """An integer >= 1 (``--count``, ``--page-size``)."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


#: More allocations than one command should ask for: a typo such as an
#: extra zero must not start an endless stream of requests.
MAX_COUNT = 1000


def allocation_count(text: str) -> int:
    """``--count``: an integer from 1 to :data:`MAX_COUNT`."""
    value = positive_int(text)
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_COUNT}, got {value}"
        )
    return value


def non_negative_int(text: str) -> int:
    """An integer >= 0 (``--limit``: 0 means no limit)."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def wait_timeout(text: str) -> float:
    """Seconds to wait (``--lease``'s syntax: 60, 2.5, 90s, 5m, 1h30m...);
    0 means wait without a time limit."""
    try:
        value = float(text)
    except ValueError:
        try:
            return float(leases.duration_seconds(text, "time limit"))
        except leases.LeaseError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(
            f"expected a non-negative number of seconds, got {text!r}"
        )
    return value


def positive_seconds(text: str) -> float:
    """Seconds more than 0 (``wait_timeout``'s syntax): a poll interval
    (0 would ask without pause), a request's timeout."""
    value = wait_timeout(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(
            f"expected a positive number of seconds, got {text!r}")
    return value


def lease_duration(text: str) -> datetime.timedelta:
    """``--lease``: ``90s``, ``30m``, ``2h``, ``1d``, ``1h30m``..."""
    try:
        return leases.parse_duration(text)
    except leases.LeaseError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an integer, got {text!r}"
        ) from None


class SortType:
    """``--sort key[:asc|desc][,key[:asc|desc]]...`` over sortable columns.

    As in python-ironicclient, several keys may be given, comma
    separated; the first one is the primary order.
    """

    def __init__(self, sortable: Sequence[str]) -> None:
        self.sortable = tuple(sortable)

    def __call__(self, text: str) -> list[tuple[str, str | None]]:
        keys = [self._one(part) for part in text.split(",")]
        names = [key for key, _ in keys]
        if len(set(names)) != len(names):
            raise argparse.ArgumentTypeError(
                f"each sort key may appear once, got {text!r}"
            )
        return keys

    def _one(self, text: str) -> tuple[str, str | None]:
        key, _, direction = text.partition(":")
        key = key.strip()
        if key not in self.sortable:
            raise argparse.ArgumentTypeError(
                f"cannot sort by {key!r}; choose from "
                + ", ".join(self.sortable)
            )
        if not direction:
            return key, None
        direction = direction.strip().lower()
        if direction not in _SORT_DIRECTIONS:
            raise argparse.ArgumentTypeError(
                f"sort direction must be asc or desc, got {direction!r}"
            )
        return key, direction


class FieldsType:
    """``--fields a,b c``: comma or space separated, each a known column."""

    def __init__(self, known: Sequence[str]) -> None:
        self.known = tuple(known)

    def __call__(self, text: str) -> list[str]:
        names = [n.strip() for n in text.split(",") if n.strip()]
        if not names:
            raise argparse.ArgumentTypeError("expected at least one field")
        unknown = [n for n in names if n not in self.known]
        if unknown:
            raise argparse.ArgumentTypeError(
                "unknown field(s) "
                + ", ".join(unknown)
                + "; choose from "
                + ", ".join(self.known)
            )
        return names


def flatten_fields(groups: Iterable[Iterable[str]] | None) -> list[str]:
    """Merge repeated ``--fields`` groups, keeping order, dropping repeats."""
    seen: dict[str, None] = {}
    for group in groups or ():
        for name in group:
            seen.setdefault(name, None)
    return list(seen)


def merge_key_values(
    pairs: Iterable[tuple[str, str]] | None,
) -> dict[str, str]:
    """Repeated ``--extra k=v``: the last value of a key wins."""
    return dict(pairs or ())


def create_arguments_problem(
    *,
    resource_class: str | None,
    node: str | None,
    count: int,
    name: str | None,
    uuid: str | None,
    output_format: str | None,
    wait: float | None = None,
    delete_on_failure: bool = False,
    listed: bool = False,
    wait_for_capacity: bool = False,
) -> str | None:
    """Return why a ``create`` command line is inconsistent, or None."""
    if not resource_class and not node:
        return "--resource-class is required unless --node is given"
    if wait_for_capacity and wait is None:
        return "--wait-for-capacity needs --wait (it waits within the " \
               "--wait time limit)"
    if wait_for_capacity and node:
        return "--wait-for-capacity does not apply to a backfill (--node)"
    if delete_on_failure and wait is None:
        return "--delete-on-failure needs --wait (there is nothing to " \
               "fail without waiting)"
    if count > 1:
        for flag, value in (("--node", node), ("--uuid", uuid),
                            ("--name", name)):
            if value:
                return f"{flag} names one allocation; it cannot be " \
                       "combined with --count greater than 1"
    if (count > 1 or listed) and output_format == "shell":
        return "-f shell describes one allocation; with --count (a " \
               "list of allocations) use another format"
    return None
