"""``baremetal allocation list|get|show|delete|set|unset``.

One cliff class per verb, shared by the OpenStackClient plugin and the
standalone ``baremetal-alloc`` command. Both applications expose the SDK
client as ``app.client_manager.baremetal_allocation``. ``create`` is
:mod:`.create` (this module still offers ``CreateAllocation``, importing it
on first use); the helpers every command shares are :mod:`.base`.

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
import importlib
import itertools
import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from cliff import lister, show

from baremetal_allocclient.osc.v1 import base, group_options, parsing

if TYPE_CHECKING:
    from baremetal_allocclient.v1 import Allocation

LOG = logging.getLogger(__name__)

#: Classes offered here but defined elsewhere: name -> module.
_MOVED = {"CreateAllocation": "baremetal_allocclient.osc.v1.create"}


def __getattr__(name: str) -> Any:
    """``CreateAllocation``, imported from :mod:`.create` on first use (the
    command table and the entry points name it here)."""
    if name in _MOVED:
        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ListAllocations(base.AllocationCommand, base.IronicclientColumns,
                      lister.Lister):
    """List allocations (every page unless --limit is given)."""

    log = logging.getLogger(__name__ + ".ListAllocations")

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        columns = base.columns_module()
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
        base.add_fields_option(display)
        return parser

    def take_action(
        self, parsed_args: argparse.Namespace
    ) -> tuple[Sequence[str], Iterable[Sequence[Any]]]:
        columns = base.columns_module()
        fields = parsing.flatten_fields(parsed_args.fields) or None
        names: Sequence[str] = fields or columns.DEFAULT_LIST
        self._default_columns = (
            None if fields else columns.IRONICCLIENT_LIST)
        if parsed_args.long:
            names = columns.ALL
            self._default_columns = columns.IRONICCLIENT_LONG
        sort_keys = parsed_args.sort or [(None, None)]
        sort_key, sort_dir = sort_keys[0]
        found: Iterable[Allocation] = base.client(self).list_allocations(
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
    columns = base.columns_module()
    iterator = iter(allocations)
    first = list(itertools.islice(iterator, 1))
    return (
        columns.row(a, names)
        for a in itertools.chain(first, iterator)
    )


class ShowAllocation(base.AllocationCommand, base.IronicclientColumns,
                     show.ShowOne):
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
        base.add_fields_option(parser)
        return parser

    def take_action(
        self, parsed_args: argparse.Namespace
    ) -> tuple[Sequence[str], Sequence[Any]]:
        fields = parsing.flatten_fields(parsed_args.fields) or None
        columns = base.columns_module()
        allocation = base.client(self).get_allocation(
            parsed_args.allocation, fields=columns.fetched(fields)
        )
        # python-ironicclient sorts the fields of a record by name.
        names = sorted(fields) if fields else columns.RECORD
        self._default_columns = None if fields else columns.IRONICCLIENT_RECORD
        return names, columns.row(allocation, names)


class DeleteAllocation(base.AllocationCommand):
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

        client = base.client(self)
        if parsed_args.group is not None:
            if parsed_args.allocations:
                self._parser.error(
                    "give allocations or --group, not both")
            try:
                group_options.delete_group(
                    client, parsed_args.group, parsed_args.ignore_missing,
                    self.app.stdout)
            except exceptions.ClientError as exc:
                raise base.CommandFailed(str(exc)) from exc
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
            raise base.CommandFailed(
                f"Failed to delete {len(failures)} of {total} "
                "allocation(s):\n  " + "\n  ".join(failures)
            )
        return 0


class SetAllocation(base.AllocationCommand):
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
        base.client(self).update_allocation(parsed_args.allocation, **kwargs)
        return 0


class UnsetAllocation(base.AllocationCommand):
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
        base.client(self).update_allocation(parsed_args.allocation, **kwargs)
        return 0
