"""The allocation request on the command line: ``create``'s options that
say what to allocate, and :func:`request_from_args`, which turns
``create``'s or ``explain``'s options into the SDK's one
:class:`~baremetal_allocclient.v1.request.AllocationRequest`.

Like every option module, it imports only argparse helpers at module
level; the SDK is imported when a request is built.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from baremetal_allocclient.osc.v1 import constraint_options, parsing

if TYPE_CHECKING:
    from baremetal_allocclient.v1 import AllocationRequest


def add_request_options(parser: argparse.ArgumentParser) -> None:
    """What to allocate: resource class, traits, name, extra, backfill."""
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


def request_from_args(parser: argparse.ArgumentParser,
                      args: argparse.Namespace) -> AllocationRequest:
    """The request of a command line: ``create``'s options, or
    ``explain``'s (which has no name, UUID, extra, node nor lease).  A
    bad constraint value is a usage error."""
    from baremetal_allocclient.v1 import AllocationRequest

    given = vars(args)
    return AllocationRequest(
        resource_class=args.resource_class,
        traits=tuple(args.traits),
        candidate_nodes=tuple(args.candidate_nodes),
        name=given.get("name"),
        uuid=given.get("uuid"),
        extra=parsing.merge_key_values(given.get("extra")) or None,
        node=given.get("node"),
        owner=args.owner,
        constraints=constraint_options.constraints_from_args(
            parser, args) or None,
        lease=given.get("lease"),
    )
