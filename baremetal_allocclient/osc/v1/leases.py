"""Leases on the command line: ``renew`` and ``expire`` (``create --lease``
is :mod:`.lease_options`).

``renew`` and ``expire`` are served by both programs
(``baremetal-alloc renew|expire`` and ``openstack baremetal allocation
renew|expire``).  ``expire`` is written for cron: it prints nothing when
there is nothing to do, one line per allocation it released, would
release (``--dry-run``), started tearing down (``--undeploy``) or left
because its node is deployed, and exits 1 when anything failed (the
failures on stderr).  The work is the SDK's
(:meth:`baremetal_allocclient.v1.Client.expire`).
"""

from __future__ import annotations

import argparse
import datetime
from collections.abc import Sequence
from typing import Any

from cliff import show

from baremetal_allocclient import leases
from baremetal_allocclient.osc.v1 import base, group_options, parsing


class RenewLease(base.AllocationCommand, show.ShowOne):
    """Renew an allocation's lease: it now ends this long from now."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = super().get_parser(prog_name)
        parser.add_argument(
            "allocation",
            nargs="?",
            metavar="<allocation>",
            type=parsing.non_empty,
            help="Name or UUID of the allocation (or --group).",
        )
        parser.add_argument(
            "--group",
            type=group_options.group_name,
            metavar="<name>",
            help="Renew every allocation of this group (see create "
            "--group) instead of one; prints one line per member renewed.",
        )
        parser.add_argument(
            "--lease",
            type=parsing.lease_duration,
            required=True,
            metavar="<duration>",
            help="New length of the lease from now: 90s, 30m, 2h, 1d, "
            "1h30m... (the allocation need not have had a lease).",
        )
        self._parser = parser
        return parser

    def take_action(
        self, parsed_args: argparse.Namespace
    ) -> tuple[Sequence[str], Sequence[Any]]:
        from baremetal_allocclient.osc.v1 import columns

        if (parsed_args.allocation is None) == (parsed_args.group is None):
            self._parser.error("give one allocation or --group")
        if parsed_args.group is not None:
            self._renew_group(parsed_args.group, parsed_args.lease)
            return (), ()
        renewed = base.client(self).renew_lease(
            parsed_args.allocation, parsed_args.lease)
        return columns.RECORD, columns.row(renewed, columns.RECORD)

    def _renew_group(self, name: str, lease: datetime.timedelta) -> None:
        """One line per member renewed; a group with no allocations, or a
        member not renewed, fails the command."""
        from baremetal_allocclient import exceptions

        try:
            renewed = base.client(self).renew_group(name, lease)
        except exceptions.ClientError as exc:
            raise base.CommandFailed(str(exc)) from exc
        if not renewed:
            raise base.CommandFailed(f"Group {name} has no allocations")
        for member in renewed:
            self.app.stdout.write(
                f"Renewed allocation {member.name} ({member.uuid}) of group "
                f"{name}: lease ends at "
                f"{member.marks.get(leases.EXPIRES_KEY)}\n")

    def produce_output(self, parsed_args: argparse.Namespace,
                       column_names: Sequence[str],
                       data: Sequence[Any]) -> int:
        if parsed_args.group is not None:
            return 0  # the lines are written already
        result: int = super().produce_output(parsed_args, column_names, data)
        return result


class ExpireLeases(base.AllocationCommand):
    """Release the allocations whose lease has ended.

    Allocations whose node is deployed are reported, not released. For
    cron: quiet when there is nothing to do, exit code 1 on failure.
    """

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = super().get_parser(prog_name)
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Change nothing; print what would be done.",
        )
        parser.add_argument(
            "--undeploy",
            action="store_true",
            help="Also tear down the deployed nodes of expired leases "
            "(their allocations are deleted when that ends). Without it "
            "they are only reported.",
        )
        parser.add_argument(
            "--resource-class",
            metavar="<resource-class>",
            help="Only allocations for this resource class.",
        )
        parser.add_argument(
            "--owner",
            metavar="<owner>",
            help="Only allocations owned by this project (API 1.60).",
        )
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        report = base.client(self).expire(
            dry_run=parsed_args.dry_run, undeploy=parsed_args.undeploy,
            resource_class=parsed_args.resource_class,
            owner=parsed_args.owner,
        )
        failed = report.failed
        for entry in report.reported:
            if entry not in failed:
                self.app.stdout.write(entry.describe() + "\n")
        if failed:
            raise base.CommandFailed("\n".join(e.describe() for e in failed))
        return 0
