"""``openstack command list``, each command under the group that serves it.

OpenStackClient's own ``command list`` prints every entry point of every
group, so a command two plugins register (python-ironicclient's and this
project's ``baremetal allocation list``, say) appears twice although only
one of them runs. This subclass, registered in ``openstack.extension``
(which OpenStackClient loads last) under the same name, drops a name from
a group whose entry point was replaced by a later group's: the listing
shows what ``openstack`` would run. Its options and output formats are
OpenStackClient's.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from typing import Any

from openstackclient.common import module
from osc_lib import utils


class ListCommand(module.ListCommand):
    """List recognized commands by group, each under the group serving it."""

    def take_action(
        self, parsed_args: argparse.Namespace
    ) -> tuple[Sequence[str], Iterable[tuple[Any, ...]]]:
        manager = self.app.command_manager
        rows: list[tuple[Any, ...]] = []
        for group in sorted(manager.get_command_groups()):
            if parsed_args.group and parsed_args.group not in group:
                continue
            names = sorted(name for name in manager.get_command_names(group)
                           if serving_group(manager.commands, name, group))
            if not names:
                continue
            shown: Any = names
            if parsed_args.formatter == "table":
                shown = utils.format_list(names, "\n")
            rows.append((group, shown))
        return ("Command Group", "Commands"), rows


def serving_group(commands: dict[str, Any], name: str, group: str) -> bool:
    """Whether ``group``'s entry point for ``name`` is the one that runs.

    ``commands`` is cliff's table of loaded commands (name -> entry point);
    a name it does not know is kept.
    """
    entry = commands.get(name)
    return entry is None or getattr(entry, "group", group) == group
