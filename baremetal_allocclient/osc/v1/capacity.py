"""``baremetal allocation capacity``: what can still be allocated.

Reads ``GET /v1/allocation_capacity``, an extension of
baremetal-alloc-server (Ironic has no such endpoint and answers 404).
One row per resource class: total nodes, allocated, reserved (unusable
now, counted per reason) and free.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cliff import lister

from baremetal_allocclient.osc.v1.allocation import _client, _Provenance

COLUMNS = (
    "Resource Class", "Total", "Allocated", "Reserved",
    "Reserved By Reason", "Free",
)


def format_reasons(reasons: Mapping[str, Any]) -> str:
    """``maintenance=1, not_available=2`` (sorted; empty when none)."""
    return ", ".join(f"{key}={reasons[key]}" for key in sorted(reasons))


def capacity_rows(
    entries: Iterable[Mapping[str, Any]],
) -> list[tuple[Any, ...]]:
    """Table rows from the server's capacity entries (pure)."""
    return [
        (
            entry.get("resource_class"), entry.get("total"),
            entry.get("allocated"), entry.get("reserved"),
            format_reasons(entry.get("reserved_by_reason") or {}),
            entry.get("free"),
        )
        for entry in entries
    ]


class AllocationCapacity(lister.Lister, _Provenance):
    """Show per resource class how many nodes are allocated, reserved
    (unusable now, by reason) and free."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = super().get_parser(prog_name)
        parser.add_argument(
            "--resource-class",
            metavar="<resource-class>",
            help="Only this resource class.",
        )
        return parser

    def take_action(
        self, parsed_args: argparse.Namespace
    ) -> tuple[Sequence[str], Iterable[Sequence[Any]]]:
        entries = _client(self).get_allocation_capacity(
            parsed_args.resource_class
        )
        return COLUMNS, capacity_rows(entries)
