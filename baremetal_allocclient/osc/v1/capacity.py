"""``baremetal allocation capacity``: what can still be allocated.

Reads ``GET /v1/allocation_capacity``, an extension of
baremetal-alloc-server (Ironic has no such endpoint and answers 404).
One row per resource class: total nodes, allocated, reserved (unusable
now, counted per reason) and free.  Column names are the server's field
names (snake_case), like every other command's, so ``-f json`` keys match
the API; ``reserved_by_reason`` is an object in json/yaml.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cliff import columns as cliff_columns
from cliff import lister

from baremetal_allocclient.osc.v1 import base
from baremetal_allocclient.osc.v1.constraint_options import (
    add_constraint_options,
    constraints_from_args,
)

COLUMNS = (
    "resource_class", "total", "allocated", "reserved",
    "reserved_by_reason", "free",
)


class ReasonsColumn(cliff_columns.FormattableColumn[dict[str, Any]]):
    """``maintenance=1, not_available=2`` in tables; an object in json."""

    def human_readable(self) -> str:
        return format_reasons(self._value)


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
            ReasonsColumn(dict(entry.get("reserved_by_reason") or {})),
            entry.get("free"),
        )
        for entry in entries
    ]


class AllocationCapacity(base.AllocationCommand, lister.Lister):
    """Show allocated, reserved and free nodes per resource class.

    Reserved nodes are those unusable now, counted by reason.
    """

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = super().get_parser(prog_name)
        self._parser = parser
        parser.add_argument(
            "--resource-class",
            metavar="<resource-class>",
            help="Only this resource class.",
        )
        add_constraint_options(parser)
        return parser

    def take_action(
        self, parsed_args: argparse.Namespace
    ) -> tuple[Sequence[str], Iterable[Sequence[Any]]]:
        entries = base.client(self).get_allocation_capacity(
            parsed_args.resource_class,
            constraints=constraints_from_args(
                self._parser, parsed_args) or None,
        )
        return COLUMNS, capacity_rows(entries)
