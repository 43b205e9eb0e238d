"""``baremetal allocation create``: parse and check the command line, then
run one mode of :mod:`.create_modes`.

Imported only when ``create`` runs (the standalone command) or is loaded
(OpenStackClient): at module level it imports cliff and this package's
option modules, none of the SDK.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from cliff import show

from baremetal_allocclient.osc.v1 import (
    base,
    constraint_options,
    create_modes,
    group_options,
    lease_options,
    parsing,
    request_options,
)

if TYPE_CHECKING:
    from baremetal_allocclient.v1 import Allocation


class CreateAllocation(base.AllocationCommand, base.IronicclientColumns,
                       show.ShowOne):
    """Create allocation(s): reserve node(s) of a resource class."""

    log = logging.getLogger(__name__ + ".CreateAllocation")

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        self._parser = parser
        request_options.add_request_options(parser)
        _add_wait_options(parser)
        constraint_options.add_constraint_options(parser)
        lease_options.add_lease_option(parser)
        group_options.add_create_options(parser)
        return parser

    def take_action(
        self, parsed_args: argparse.Namespace
    ) -> tuple[Sequence[str], Any]:
        if group_options.wanted(parsed_args):
            return self._group(parsed_args)
        return self._reserve(parsed_args)

    def _group(
        self, parsed_args: argparse.Namespace
    ) -> tuple[Sequence[str], Any]:
        """``--all-or-nothing`` / ``--group``: always a list."""
        self._check(group_options.create_problem(parsed_args))
        self._check(parsing.create_arguments_problem(
            resource_class=parsed_args.resource_class, node=None,
            count=parsed_args.count or 1, name=None, uuid=None,
            output_format=None))
        self._many = True
        made = create_modes.make_group(
            self._context(parsed_args), parsed_args)
        return self._output(made, parsed_args)

    def _reserve(
        self, parsed_args: argparse.Namespace
    ) -> tuple[Sequence[str], Any]:
        """One allocation, or a list of them with ``--count``."""
        self._check(parsing.create_arguments_problem(
            resource_class=parsed_args.resource_class,
            node=parsed_args.node,
            count=parsed_args.count or 1,
            name=parsed_args.name,
            uuid=parsed_args.uuid,
            output_format=getattr(parsed_args, "formatter", None),
            wait=parsed_args.wait_timeout,
            delete_on_failure=parsed_args.delete_on_failure,
            listed=parsed_args.count is not None,
            wait_for_capacity=parsed_args.wait_for_capacity,
        ))
        from baremetal_allocclient.v1 import budget

        self._many = parsed_args.count is not None
        ctx = self._context(parsed_args)
        # One budget from the first request to the last (0: no limit),
        # extension discovery included.
        deadline = ctx.client.deadline(parsed_args.wait_timeout or None)
        with budget.bounded(deadline):
            made = create_modes.reserve(ctx, deadline, parsed_args)
            return self._output(made, parsed_args)

    def _check(self, problem: str | None) -> None:
        """A usage error (exit code 2) if the command line has a problem."""
        if problem:
            self._parser.error(problem)

    def _context(
        self, parsed_args: argparse.Namespace
    ) -> create_modes.Context:
        def show_records(made: Sequence[Allocation]) -> None:
            columns, data = self._output(made, parsed_args)
            self.produce_output(parsed_args, columns, data)

        return create_modes.Context(
            client=base.client(self), parser=self._parser,
            stderr=self.app.stderr, many=self._many,
            delete_hint=self._delete_hint, show=show_records)

    def _output(
        self, made: Sequence[Allocation], parsed_args: argparse.Namespace
    ) -> tuple[Sequence[str], Any]:
        """Records of ``made``: a list with --count, else one record."""
        columns = base.columns_module()
        # python-ironicclient's create prints its --long columns' order.
        self._default_columns = columns.IRONICCLIENT_LONG
        if self._many:
            return columns.ALL, [columns.row(a, columns.ALL) for a in made]
        return columns.ALL, columns.row(made[0], columns.ALL)

    def produce_output(
        self,
        parsed_args: argparse.Namespace,
        column_names: Sequence[str],
        data: Any,
    ) -> int:
        """One record, or a list of records with ``--count``."""
        if not getattr(self, "_many", False):
            result: int = super().produce_output(
                parsed_args, column_names, data
            )
            return result
        names, selector = self._generate_columns_and_selector(
            parsed_args, column_names
        )
        rows: Iterable[Sequence[Any]] = data
        if selector:
            rows = [list(self._compress_iterable(r, selector)) for r in data]
        # table, json, value and yaml formatters serve lists and records.
        formatter: Any = self.formatter
        formatter.emit_list(names, rows, self.app.stdout, parsed_args)
        return 0

    def _delete_hint(self, uuids: Sequence[str]) -> str:
        """``openstack baremetal allocation delete U...`` for this app."""
        name = getattr(self, "cmd_name", None) or "create"
        words = [getattr(self.app, "NAME", "baremetal-alloc")]
        words += [*name.split()[:-1], "delete", *uuids]
        return " ".join(words)


def _add_wait_options(parser: argparse.ArgumentParser) -> None:
    """How many, and whether and how long to wait."""
    parser.add_argument(
        "--count",
        type=parsing.allocation_count,
        default=None,
        metavar="<n>",
        help="Create this many allocations with the same request "
        "(at most 1000). With --count the output is always a list "
        "(also for --count 1); without it, one record.",
    )
    parser.add_argument(
        "--wait",
        dest="wait_timeout",
        type=parsing.wait_timeout,
        nargs="?",
        const=0.0,
        default=None,
        metavar="<timeout>",
        help="Wait until the allocation(s) leave the 'allocating' "
        "state; fail (exit code 1) if any ends in 'error'. Optional "
        "time limit for the whole command, every request included: "
        "seconds or a duration such as 90s, 5m, 1h30m; 0 (the "
        "default) waits without a limit.",
    )
    parser.add_argument(
        "--delete-on-failure",
        action="store_true",
        help="With --wait: if any allocation fails, the time limit "
        "passes, or the command is interrupted (SIGINT, SIGTERM), "
        "delete every allocation this command created. Without it, "
        "those are reported (and printed unless interrupted).",
    )
    parser.add_argument(
        "--wait-for-capacity",
        action="store_true",
        help="With --wait: when no node is free, wait in line for one "
        "(first come, first served, per resource class) within the "
        "--wait time limit instead of failing. On a server without "
        "the queue extension (Ironic) the allocation is deleted and "
        "created again with backoff until the limit; fairness is not "
        "guaranteed there (one allocation only).",
    )
