"""``baremetal allocation create|list|get|show|delete|set|unset``.

One cliff class per verb, shared by the OpenStackClient plugin and the
standalone ``baremetal-alloc`` command. Both applications expose the SDK
client as ``app.client_manager.baremetal_allocation``.

OpenStackClient imports this module on every ``openstack`` run (stevedore
loads each command class it registers), so it imports only cliff and the
pure argument parsers at module level; the SDK's exceptions, the column
registry (which needs the SDK) and the progress reporter are imported when
a command actually runs.

Exit codes: argparse and the checks in :mod:`.parsing` end the command with
2 (usage error); any failure while talking to the server raises, which cliff
reports as one line on stderr (a traceback only with ``--debug``) and turns
into 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import logging
from collections.abc import Iterable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from cliff import command, lister, show

from baremetal_allocclient.osc.v1 import group_options, parsing
from baremetal_allocclient.osc.v1.constraint_options import (
    add_constraint_options,
    constraints_from_args,
)

if TYPE_CHECKING:
    from baremetal_allocclient import exceptions
    from baremetal_allocclient.osc import progress as progress_module
    from baremetal_allocclient.v1 import Allocation, Client
    from baremetal_allocclient.v1 import budget as budget_module
    from baremetal_allocclient.v1 import reservation as reservation_module

LOG = logging.getLogger(__name__)


class CommandFailed(Exception):
    """The command did not (entirely) succeed; the message says why."""


class _Provenance(command.Command):
    """States where the command comes from, without scanning packages.

    cliff's default epilog looks up the distribution of the command's module
    with ``importlib.metadata.packages_distributions()``, which reads every
    installed package's metadata: a large share of a short command's run
    time. The answer is known here.
    """

    def get_epilog(self) -> str:
        parts = [self._epilog or ""]
        parts.extend(
            text
            for hook in self._hooks
            if hook.obj is not None
            and (text := hook.obj.get_epilog()) is not None
        )
        parts.append("This command is provided by baremetal-allocclient.")
        return "\n\n".join(p for p in parts if p)


class _IronicclientColumns(command.Command):
    """Shows python-ironicclient's columns unless ``-c`` names others.

    ``take_action`` returns every column it has and sets
    ``_default_columns``: the ones shown without ``-c`` (None: all).
    """

    _default_columns: Sequence[str] | None = None

    def _generate_columns_and_selector(
        self, parsed_args: argparse.Namespace, column_names: Sequence[str]
    ) -> tuple[list[str], list[bool] | None]:
        shown = self._default_columns
        if parsed_args.columns or shown is None:
            result: tuple[list[str], list[bool] | None] = (
                super()._generate_columns_and_selector(  # type: ignore[misc]
                    parsed_args, column_names))
            return result
        return ([c for c in column_names if c in shown],
                [c in shown for c in column_names])


def _columns() -> ModuleType:
    """The column registry; imported late because it imports the SDK."""
    from baremetal_allocclient.osc.v1 import columns

    return columns


def _client(cmd: command.Command) -> Client:
    manager: Any = getattr(cmd.app, "client_manager")  # noqa: B009
    client: Client = manager.baremetal_allocation
    return client


def _add_fields_option(parser: argparse.ArgumentParser | Any) -> None:
    columns = _columns()
    parser.add_argument(
        "--fields",
        nargs="+",
        action="extend",
        type=parsing.FieldsType(columns.ALL),
        metavar="<field>",
        help=(
            "Only fetch and show these fields (comma or space separated, "
            "repeatable): " + ", ".join(columns.ALL) + "."
        ),
    )


class CreateAllocation(_IronicclientColumns, show.ShowOne, _Provenance):
    """Create allocation(s): reserve node(s) of a resource class."""

    log = logging.getLogger(__name__ + ".CreateAllocation")

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        self._parser = parser
        parser.add_argument(
            "--resource-class",
            metavar="<resource-class>",
            type=parsing.non_empty,
            help="Resource class the node must have (required unless "
            "--node is given).",
        )
        parser.add_argument(
            "--trait",
            dest="traits",
            action="append",
            type=parsing.trait,
            default=[],
            metavar="<trait>",
            help="Trait the node must have: a standard trait (os-traits) "
            "or CUSTOM_<NAME> in capitals. Repeat for several.",
        )
        parser.add_argument(
            "--candidate-node",
            dest="candidate_nodes",
            action="append",
            default=[],
            metavar="<node>",
            help="Only pick among these nodes (name or UUID). Repeat for "
            "several.",
        )
        parser.add_argument(
            "--name",
            metavar="<name>",
            type=parsing.non_empty,
            help="Unique name of the allocation.",
        )
        parser.add_argument(
            "--uuid",
            metavar="<uuid>",
            help="UUID of the allocation (default: chosen by the client, "
            "so that a create retried after a lost answer cannot make a "
            "second allocation).",
        )
        parser.add_argument(
            "--owner",
            metavar="<owner>",
            help="Project owning the allocation (API 1.60).",
        )
        parser.add_argument(
            "--extra",
            action="append",
            type=parsing.key_value,
            default=[],
            metavar="<key=value>",
            help="Arbitrary metadata to record. Repeat for several.",
        )
        parser.add_argument(
            "--node",
            metavar="<node>",
            help="Backfill: record an allocation for this already deployed "
            "node (name or UUID) instead of picking one (API 1.58).",
        )
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
        add_constraint_options(parser)
        _lease_options().add_lease_option(parser)
        group_options.add_create_options(parser)
        return parser

    def take_action(
        self, parsed_args: argparse.Namespace
    ) -> tuple[Sequence[str], Any]:
        if group_options.wanted(parsed_args):
            return self._create_group(parsed_args)
        problem = parsing.create_arguments_problem(
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
        )
        if problem:
            self._parser.error(problem)
        from baremetal_allocclient.v1 import budget

        # One budget from the first request to the last (0: no limit),
        # extension discovery included.
        client = _client(self)
        deadline = client.deadline(parsed_args.wait_timeout or None)
        with budget.bounded(deadline):
            return self._create(client, deadline, parsed_args)

    def _create(
        self, client: Client, deadline: budget_module.Deadline,
        parsed_args: argparse.Namespace,
    ) -> tuple[Sequence[str], Any]:
        from baremetal_allocclient.osc import progress
        from baremetal_allocclient.v1 import interrupts, reservation

        waits = parsed_args.wait_timeout is not None
        capacity = parsed_args.wait_for_capacity
        count = parsed_args.count or 1
        in_line = capacity and self._server_line(client, count)
        reporter = progress.for_stream(self.app.stderr) if waits else None
        run = reservation.Reservation(
            client, _request(self._parser, parsed_args), deadline, reporter,
            queue=in_line,
        )
        self._many = parsed_args.count is not None
        with interrupts.sigterm_raises():
            try:
                self._create_and_wait(run, count, waits, reporter,
                                      retry_capacity=capacity and not in_line)
            except (KeyboardInterrupt, exceptions_module().Terminated) as exc:
                self._after_interrupt(run, parsed_args, exc)
            except (exceptions_module().ClientError, CommandFailed) as exc:
                self._after_failure(run, parsed_args, exc)
        return self._output(run.made(), parsed_args)

    def _create_group(
        self, parsed_args: argparse.Namespace
    ) -> tuple[Sequence[str], Any]:
        """``--all-or-nothing`` / ``--group``: N active or none."""
        problem = group_options.create_problem(parsed_args)
        if problem:
            self._parser.error(problem)
        problem = parsing.create_arguments_problem(
            resource_class=parsed_args.resource_class, node=None,
            count=parsed_args.count or 1, name=None, uuid=None,
            output_format=None)
        if problem:
            self._parser.error(problem)
        from baremetal_allocclient.v1 import interrupts

        request = dataclasses.replace(
            _request(self._parser, parsed_args), name=parsed_args.group)
        self._many = True
        try:
            with interrupts.sigterm_raises():
                made = group_options.create_group(
                    _client(self), request, parsed_args.count or 1,
                    parsed_args.wait_timeout or None)
        except exceptions_module().GroupFailed as exc:
            raise CommandFailed(str(exc)) from exc
        except (KeyboardInterrupt, exceptions_module().Terminated) as exc:
            self.app.stderr.write(group_options.interrupted_message(
                parsed_args.group, getattr(exc, "group_left", ())))
            raise SystemExit(interrupts.exit_status(exc)) from None
        return self._output(made, parsed_args)

    def _server_line(self, client: Any, count: int) -> bool:
        """Whether the server keeps a line (its queue extension); without
        one, say that retries are not fair, and refuse --count."""
        if client.supports_queue():
            return True
        if count > 1:
            raise CommandFailed(
                "--wait-for-capacity with --count needs a server that "
                "offers waiting in line (the queue extension); this one "
                "does not")
        from baremetal_allocclient.v1 import queueing

        self.app.stderr.write(queueing.UNFAIR + "\n")
        return False

    @staticmethod
    def _create_and_wait(
        run: reservation_module.Reservation,
        count: int,
        waits: bool,
        reporter: progress_module.TtyProgress | None,
        *,
        retry_capacity: bool = False,
    ) -> None:
        if reporter is not None:
            reporter.start(count)
        try:
            if retry_capacity:
                run.settle_one(retry_capacity=True)
                return
            run.create(count, hold=waits)
            if waits:
                run.wait()
        finally:
            if reporter is not None:
                reporter.close()

    def _output(
        self, made: Sequence[Allocation], parsed_args: argparse.Namespace
    ) -> tuple[Sequence[str], Any]:
        """Records of ``made``: a list with --count, else one record."""
        columns = _columns()
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

    def _release(
        self, run: reservation_module.Reservation, *, interrupted: bool
    ) -> list[str]:
        """Delete what the run made; return the UUIDs still left."""
        report = run.release(interrupted=interrupted)
        for uuid in report.deleted:
            self.app.stderr.write(f"Deleted allocation {uuid}\n")
        for uuid, reason in report.failed:
            self.app.stderr.write(
                f"Could not delete allocation {uuid}: {reason}\n"
            )
        return [uuid for uuid, _ in report.failed]

    def _left_line(self, uuids: Sequence[str], why: str) -> str:
        """``Interrupted; allocations left: U (release with: ...)``."""
        return (
            f"{why}; allocations left: {' '.join(uuids)} (release "
            f"with: {self._delete_hint(uuids)})"
        )

    def _after_interrupt(
        self,
        run: reservation_module.Reservation,
        parsed_args: argparse.Namespace,
        exc: BaseException,
    ) -> None:
        """Ctrl-C or SIGTERM: delete (--delete-on-failure) or report the
        UUIDs, then exit 130 or 143."""
        from baremetal_allocclient.v1 import interrupts

        if parsed_args.delete_on_failure:
            left = self._release(run, interrupted=True)
        else:
            left = list(run.attempted)
        if left:
            self.app.stderr.write(self._left_line(left, "Interrupted") + "\n")
        raise SystemExit(interrupts.exit_status(exc)) from None

    def _after_failure(
        self,
        run: reservation_module.Reservation,
        parsed_args: argparse.Namespace,
        exc: Exception,
    ) -> None:
        """Print what exists (records on stdout), say what failed."""
        message = _failure_message(exc)
        unconfirmed = run.unconfirmed()
        if parsed_args.delete_on_failure:
            left = self._release(run, interrupted=False)
            made = [a for a in run.made() if a.uuid in left]
        else:
            left = list(run.attempted)
            made = run.made()
        if made and (self._many or len(made) == 1):
            columns, data = self._output(made, parsed_args)
            self.produce_output(parsed_args, columns, data)
        for uuid in unconfirmed:
            if uuid in left:
                message += (f"\nAllocation {uuid} may exist: its create got "
                            "no answer in time")
        if left:
            message += "\n" + self._left_line(left, "Failed")
        raise CommandFailed(message) from exc

def _failure_message(exc: Exception) -> str:
    """One line per failed allocation, or the error's own message."""
    from baremetal_allocclient import exceptions

    if isinstance(exc, exceptions.AllocationFailed):
        return _failure_report(exc.results or (exc.allocation,), exc)
    return str(exc)


def _request(
    parser: argparse.ArgumentParser, parsed_args: argparse.Namespace
) -> reservation_module.Request:
    from baremetal_allocclient.v1 import reservation

    return reservation.Request(
        resource_class=parsed_args.resource_class,
        traits=tuple(parsed_args.traits),
        candidate_nodes=tuple(parsed_args.candidate_nodes),
        name=parsed_args.name,
        uuid=parsed_args.uuid,
        extra=_lease_options().extra_with_lease(
            parsing.merge_key_values(parsed_args.extra), parsed_args.lease,
        ) or None,
        node=parsed_args.node,
        owner=parsed_args.owner,
        constraints=constraints_from_args(parser, parsed_args) or None,
    )


def _lease_options() -> ModuleType:
    """``--lease`` (osc/v1/leases.py, which imports this module)."""
    from baremetal_allocclient.osc.v1 import leases

    return leases


def exceptions_module() -> ModuleType:
    """The SDK's exceptions, imported when a command runs."""
    from baremetal_allocclient import exceptions

    return exceptions


def _failure_report(
    final: Sequence[Allocation], exc: exceptions.AllocationFailed
) -> str:
    """One line per failed allocation, with the server's last_error."""
    failed = [a for a in final if a.state == "error"] or [exc.allocation]
    lines = [
        f"Allocation {a.ident} failed: {a.last_error or 'no reason given'}"
        for a in failed
    ]
    return "\n".join(lines)


class ListAllocations(_IronicclientColumns, lister.Lister, _Provenance):
    """List allocations (every page unless --limit is given)."""

    log = logging.getLogger(__name__ + ".ListAllocations")

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        columns = _columns()
        parser = super().get_parser(prog_name)
        parser.add_argument(
            "--state",
            metavar="<state>",
            type=parsing.allocation_state,
            help="Only allocations in this state (allocating, active, "
            "error).",
        )
        parser.add_argument(
            "--resource-class",
            metavar="<resource-class>",
            help="Only allocations for this resource class.",
        )
        parser.add_argument(
            "--node",
            metavar="<node>",
            help="Only the allocation of this node (name or UUID).",
        )
        parser.add_argument(
            "--owner",
            metavar="<owner>",
            help="Only allocations owned by this project (API 1.60).",
        )
        parser.add_argument(
            "--limit",
            type=parsing.non_negative_int,
            metavar="<n>",
            help="Return at most this many allocations (0 or unset: all, "
            "fetched page by page).",
        )
        parser.add_argument(
            "--marker",
            metavar="<uuid>",
            help="Start after this allocation UUID (e.g. the last one of a "
            "previous --limit call).",
        )
        parser.add_argument(
            "--sort",
            type=parsing.SortType(columns.SORTABLE),
            metavar="<key>[:<direction>][,<key>[:<direction>]...]",
            help="Sort by these fields, each asc (default) or desc, as in "
            "python-ironicclient: "
            + ", ".join(columns.SORTABLE)
            + ". One key is sorted by the server (page by page); with "
            "several, the server sorts by the first and the fetched "
            "result is sorted by all of them.",
        )
        parser.add_argument(
            "--page-size",
            type=parsing.positive_int,
            metavar="<n>",
            help="Allocations per request (default: the server's maximum).",
        )
        parser.add_argument(
            "--expired",
            action="store_true",
            help="Only allocations whose lease has ended (checked on the "
            "client, over every page; see 'expire').",
        )
        group_options.add_list_option(parser)
        display = parser.add_mutually_exclusive_group()
        display.add_argument(
            "--long",
            action="store_true",
            help="Show every field.",
        )
        _add_fields_option(display)
        return parser

    def take_action(
        self, parsed_args: argparse.Namespace
    ) -> tuple[Sequence[str], Iterable[Sequence[Any]]]:
        columns = _columns()
        fields = parsing.flatten_fields(parsed_args.fields) or None
        names: Sequence[str] = fields or columns.DEFAULT_LIST
        self._default_columns = (
            None if fields else columns.IRONICCLIENT_LIST)
        if parsed_args.long:
            names = columns.ALL
            self._default_columns = columns.IRONICCLIENT_LONG
        sort_keys = parsed_args.sort or [(None, None)]
        sort_key, sort_dir = sort_keys[0]
        found: Iterable[Allocation] = _client(self).list_allocations(
            state=parsed_args.state,
            resource_class=parsed_args.resource_class,
            node=parsed_args.node,
            owner=parsed_args.owner,
            fields=columns.fetched(fields),
            limit=parsed_args.limit or None,
            marker=parsed_args.marker,
            sort_key=sort_key,
            sort_dir=sort_dir,
            page_size=parsed_args.page_size,
            expired=True if parsed_args.expired else None,
            group=parsed_args.group,
        )
        if len(sort_keys) > 1:
            found = columns.sort_allocations(found, sort_keys)
        return names, _rows_checked_early(found, names)


def _rows_checked_early(
    allocations: Iterable[Allocation],
    names: Sequence[str],
) -> Iterator[tuple[Any, ...]]:
    """Fetch the first page now, so errors surface before any output."""
    columns = _columns()
    iterator = iter(allocations)
    first = list(itertools.islice(iterator, 1))
    return (
        columns.row(a, names)
        for a in itertools.chain(first, iterator)
    )


class ShowAllocation(_IronicclientColumns, show.ShowOne, _Provenance):
    """Show one allocation."""

    log = logging.getLogger(__name__ + ".ShowAllocation")

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument(
            "allocation",
            metavar="<allocation>",
            type=parsing.non_empty,
            help="Name or UUID of the allocation.",
        )
        _add_fields_option(parser)
        return parser

    def take_action(
        self, parsed_args: argparse.Namespace
    ) -> tuple[Sequence[str], Sequence[Any]]:
        fields = parsing.flatten_fields(parsed_args.fields) or None
        columns = _columns()
        allocation = _client(self).get_allocation(
            parsed_args.allocation, fields=columns.fetched(fields)
        )
        # python-ironicclient sorts the fields of a record by name.
        names = sorted(fields) if fields else columns.RECORD
        self._default_columns = None if fields else columns.IRONICCLIENT_RECORD
        return names, columns.row(allocation, names)


class DeleteAllocation(_Provenance):
    """Delete allocation(s), releasing their nodes."""

    log = logging.getLogger(__name__ + ".DeleteAllocation")

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        self._parser = parser
        parser.add_argument(
            "allocations",
            nargs="*",
            type=parsing.non_empty,
            metavar="<allocation>",
            help="Names or UUIDs of the allocations to delete.",
        )
        parser.add_argument(
            "--ignore-missing",
            action="store_true",
            help="Do not fail for allocations (or a group) that do not "
            "exist.",
        )
        group_options.add_delete_option(parser)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        from baremetal_allocclient import exceptions

        client = _client(self)
        if parsed_args.group is not None:
            if parsed_args.allocations:
                self._parser.error(
                    "give allocations or --group, not both")
            try:
                group_options.delete_group(
                    client, parsed_args.group, parsed_args.ignore_missing,
                    self.app.stdout)
            except exceptions.ClientError as exc:
                raise CommandFailed(str(exc)) from exc
            return 0
        if not parsed_args.allocations:
            self._parser.error(
                "the following arguments are required: <allocation> "
                "(or --group)")
        failures: list[str] = []
        for ident in parsed_args.allocations:
            try:
                deleted = client.delete_allocation(
                    ident, ignore_missing=parsed_args.ignore_missing
                )
            except exceptions.ClientError as exc:
                LOG.debug("deleting %s failed", ident, exc_info=True)
                failures.append(f"{ident}: {exc}")
            else:
                self.app.stdout.write(
                    f"Deleted allocation {ident}\n" if deleted else
                    f"Allocation {ident} not found; nothing to delete\n"
                )
        if failures:
            total = len(parsed_args.allocations)
            raise CommandFailed(
                f"Failed to delete {len(failures)} of {total} "
                "allocation(s):\n  " + "\n  ".join(failures)
            )
        return 0


class SetAllocation(_Provenance):
    """Set the name or extra metadata of an allocation."""

    log = logging.getLogger(__name__ + ".SetAllocation")

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        self._parser = parser
        parser.add_argument(
            "allocation",
            metavar="<allocation>",
            type=parsing.non_empty,
            help="Name or UUID of the allocation.",
        )
        parser.add_argument(
            "--name",
            metavar="<name>",
            type=parsing.non_empty,
            help="New unique name of the allocation.",
        )
        parser.add_argument(
            "--extra",
            action="append",
            type=parsing.key_value,
            default=[],
            metavar="<key=value>",
            help="Extra metadata to set. Repeat for several.",
        )
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        extra = parsing.merge_key_values(parsed_args.extra)
        if parsed_args.name is None and not extra:
            self._parser.error("nothing to set: give --name or --extra")
        kwargs: dict[str, Any] = {}
        if parsed_args.name is not None:
            kwargs["name"] = parsed_args.name
        if extra:
            kwargs["set_extra"] = extra
        _client(self).update_allocation(parsed_args.allocation, **kwargs)
        return 0


class UnsetAllocation(_Provenance):
    """Remove the name or extra metadata keys of an allocation."""

    log = logging.getLogger(__name__ + ".UnsetAllocation")

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        self._parser = parser
        parser.add_argument(
            "allocation",
            metavar="<allocation>",
            type=parsing.non_empty,
            help="Name or UUID of the allocation.",
        )
        parser.add_argument(
            "--name",
            action="store_true",
            help="Remove the name.",
        )
        parser.add_argument(
            "--extra",
            action="append",
            type=parsing.non_empty,
            default=[],
            metavar="<key>",
            help="Extra metadata key to remove. Repeat for several.",
        )
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        if not parsed_args.name and not parsed_args.extra:
            self._parser.error("nothing to unset: give --name or --extra")
        kwargs: dict[str, Any] = {}
        if parsed_args.name:
            kwargs["name"] = None
        if parsed_args.extra:
            kwargs["unset_extra"] = tuple(parsed_args.extra)
        _client(self).update_allocation(parsed_args.allocation, **kwargs)
        return 0
