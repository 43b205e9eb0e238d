"""``explain``: the selection funnel of an allocation request, reserving
nothing.  The same options as ``create``; one row per step with the
nodes left after it, the first step that left none marked.  ``-f json``
gives ``[{"Step": ..., "Count": ..., "Emptied": ...}, ...]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cliff import lister

from baremetal_allocclient.osc.v1 import base, parsing, request_options
from baremetal_allocclient.osc.v1.constraint_options import (
    add_constraint_options,
)

COLUMNS = ("Step", "Count", "Emptied")


def funnel_rows(doc: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """Table rows from an explain document (pure)."""
    empty = doc.get("first_empty")
    return [(step["step"], step["count"], step["step"] == empty)
            for step in doc.get("funnel") or ()]


class ExplainAllocation(base.AllocationCommand, lister.Lister):
    """Show how many nodes pass each filter of an allocation request.

    The filter that leaves none is named; nothing is reserved.
    """

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = super().get_parser(prog_name)
        self._parser = parser
        parser.add_argument(
            "--resource-class", required=True, type=parsing.non_empty,
            metavar="<resource-class>", help="Resource class to explain.")
        parser.add_argument(
            "--trait", dest="traits", action="append", default=[],
            metavar="<trait>", help="Trait the node must have. Repeat.")
        parser.add_argument(
            "--candidate-node", dest="candidate_nodes", action="append",
            default=[], metavar="<node>",
            help="Only these nodes (name or UUID). Repeat.")
        parser.add_argument(
            "--owner", metavar="<owner>",
            help="Project the allocation would belong to (nodes it owns "
            "or leases).")
        add_constraint_options(parser)
        return parser

    def take_action(
        self, parsed_args: argparse.Namespace
    ) -> tuple[Sequence[str], Iterable[Sequence[Any]]]:
        doc = base.client(self).explain(
            request_options.request_from_args(self._parser, parsed_args))
        return COLUMNS, funnel_rows(doc)
