"""What every ``baremetal allocation`` command shares.

The command modules (:mod:`.allocation`, :mod:`.create`, :mod:`.leases`,
:mod:`.capacity`, :mod:`.explain`) import this module; it imports none of
them. Like them, it imports only cliff and the standard library at module
level: OpenStackClient imports every command module on each ``openstack``
run, so the SDK (and the column registry, which needs it) is imported when
a command actually runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from cliff import command

from baremetal_allocclient.osc.v1 import parsing

if TYPE_CHECKING:
    from baremetal_allocclient.v1 import Client


class CommandFailed(Exception):
    """The command did not (entirely) succeed; the message says why."""


class AllocationCommand(command.Command):
    """cliff's Command without its scans of installed packages.

    Scanning costs a short command a large share of its run time, and the
    answers are known here:

    - the epilog says where the command comes from (cliff looks the
      distribution up with ``importlib.metadata.packages_distributions()``,
      which reads every installed package's metadata);
    - under an application that has a fixed table of output formatters
      (its class defines ``formatters(namespace)``, as ``baremetal-alloc``
      does), the formatters come from that table and the command has no
      hooks, instead of both being looked up among every installed entry
      point. Under OpenStackClient cliff's own lookups run.

    Every command of this package derives from it, as its first base.
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

    def _fixed_formatters(self) -> Any:
        """The application's formatter table (a method), or None."""
        if getattr(type(self.app), "formatters", None) is None:
            return None
        return getattr(self.app, "formatters")  # noqa: B009

    def _load_hooks(self) -> None:
        if self._fixed_formatters() is None:
            super()._load_hooks()
        else:
            self._hooks = []

    def _load_formatter_plugins(self) -> Any:
        formatters = self._fixed_formatters()
        if formatters is None:
            return super()._load_formatter_plugins()  # type: ignore[misc]
        return formatters(getattr(self, "formatter_namespace"))  # noqa: B009


class IronicclientColumns(command.Command):
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


def columns_module() -> ModuleType:
    """The column registry; imported late because it imports the SDK."""
    from baremetal_allocclient.osc.v1 import columns

    return columns


def exceptions_module() -> ModuleType:
    """The SDK's exceptions, imported when a command runs."""
    from baremetal_allocclient import exceptions

    return exceptions


def client(cmd: command.Command) -> Client:
    """The SDK client of the application running ``cmd``."""
    manager: Any = getattr(cmd.app, "client_manager")  # noqa: B009
    found: Client = manager.baremetal_allocation
    return found


def add_fields_option(parser: argparse.ArgumentParser | Any) -> None:
    """``--fields``: fetch and show only these fields."""
    columns = columns_module()
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
