"""Groups on the command line: ``create --count N --all-or-nothing
[--group NAME]``, ``list --group NAME`` and ``delete --group NAME``.

The options are added to the ``create``, ``list`` and ``delete`` commands
of :mod:`.allocation`; the work is :meth:`Client.allocate_group`,
:meth:`Client.list_allocations` (``group=``) and
:meth:`Client.release_group`.  Like :mod:`.allocation`, this module
imports only argparse helpers at module level.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baremetal_allocclient.v1 import Client


def group_name(text: str) -> str:
    """``--group``: a valid group name (usage error otherwise)."""
    from baremetal_allocclient import groups

    try:
        groups.check(1, text)
    except groups.GroupError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def add_create_options(parser: argparse.ArgumentParser) -> None:
    """``--all-or-nothing`` and ``--group`` of ``create``."""
    parser.add_argument(
        "--all-or-nothing",
        action="store_true",
        help="With --count N: either N active allocations on N distinct "
        "nodes, or none (every one made is deleted and the command says "
        "why, exit code 1). Waits for them (the --wait time limit "
        "applies). On baremetal-alloc-server the nodes are reserved in "
        "one transaction; on Ironic the allocations are created and "
        "rolled back on any failure.",
    )
    parser.add_argument(
        "--group",
        metavar="<name>",
        type=group_name,
        help="Name the group (implies --all-or-nothing): the allocations "
        "are named <name>-0 .. <name>-<N-1> and record the group (the "
        "reference server's group field; on Ironic the string key "
        "baremetal_alloc:group of extra), so 'list --group' and "
        "'delete --group' find them.",
    )
    add_spread_options(parser)


def add_spread_options(parser: argparse.ArgumentParser) -> None:
    """``--spread-over`` and its bounds, for a group ``create``."""
    parser.add_argument(
        "--spread-over", metavar="<domain>",
        help="With a group: spread its members over this failure domain: "
        "conductor_group, shard, or property:KEY (such as property:rack). "
        "Implies --all-or-nothing. Decided in the group's one "
        "transaction on "
        "baremetal-alloc-server; by this client, best effort, on Ironic.")
    parser.add_argument(
        "--max-per-domain", type=_positive, default=1, metavar="<n>",
        help="With --spread-over: at most this many members per domain "
        "(default 1).")
    parser.add_argument(
        "--min-domains", type=_positive, metavar="<n>",
        help="With --spread-over: at least this many domains.")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"expected a positive integer, got {text!r}")
    return value


def spread_of(parsed_args: argparse.Namespace) -> Any:
    """The :class:`~baremetal_allocclient.spread.Spread` asked for, or
    None; raises ``SpreadError`` for a bad domain."""
    from baremetal_allocclient.spread import Spread

    over = getattr(parsed_args, "spread_over", None)
    if over is None:
        return None
    return Spread(over, parsed_args.max_per_domain, parsed_args.min_domains)


def wanted(parsed_args: argparse.Namespace) -> bool:
    """Whether ``create`` makes an all-or-nothing group."""
    return bool(parsed_args.all_or_nothing or parsed_args.group
                or getattr(parsed_args, "spread_over", None))


def create_problem(parsed_args: argparse.Namespace) -> str | None:
    """Why a group ``create`` command line is inconsistent (pure)."""
    from baremetal_allocclient.spread import SpreadError

    try:
        spread = spread_of(parsed_args)
        if spread is not None:
            spread.check(parsed_args.count or 1)
    except SpreadError as exc:
        return f"--spread-over: {exc}"
    for flag, value in (("--node", parsed_args.node),
                        ("--uuid", parsed_args.uuid),
                        ("--name", parsed_args.name)):
        if value:
            hint = " (name the group with --group)" if flag == "--name" \
                else ""
            return (f"{flag} cannot be combined with --all-or-nothing or "
                    f"--group{hint}")
    if getattr(parsed_args, "formatter", None) == "shell":
        return ("-f shell describes one allocation; a group is a list of "
                "allocations, use another format")
    return None


def interrupted_message(group: str | None,
                        left: Any) -> str:
    """What an interrupted group ``create`` says (pure): that nothing
    is left, or which members could not be deleted and how to."""
    if not left:
        return "Interrupted; the group's allocations were deleted\n"
    uuids = " ".join(str(uuid) for uuid, _why in left)
    how = f"--group {group}" if group else uuids
    return (f"Interrupted; allocations left: {uuids} (release with: "
            f"baremetal-alloc delete {how})\n")


def add_list_option(parser: argparse.ArgumentParser) -> None:
    """``list --group``."""
    parser.add_argument(
        "--group",
        metavar="<name>",
        type=group_name,
        help="Only the allocations of this group (see create --group).",
    )


def add_delete_option(parser: argparse.ArgumentParser) -> None:
    """``delete --group``."""
    parser.add_argument(
        "--group",
        metavar="<name>",
        type=group_name,
        help="Delete every allocation of this group (see create --group) "
        "instead of naming allocations.",
    )


def delete_group(client: Client, name: str, ignore_missing: bool,
                 stdout: Any) -> None:
    """Release a group, one line per deleted allocation; a group with no
    allocations is an error unless ``ignore_missing``."""
    from baremetal_allocclient.osc.v1.base import CommandFailed

    deleted = client.release_group(name)
    for uuid in deleted:
        stdout.write(f"Deleted allocation {uuid} (group {name})\n")
    if not deleted:
        if not ignore_missing:
            raise CommandFailed(f"Group {name} has no allocations")
        stdout.write(f"Group {name} has no allocations; nothing to "
                     "delete\n")
