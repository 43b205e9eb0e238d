"""``autoprogram-cliff-table``: cliff's autoprogram for a fixed command table.

cliff's ``autoprogram-cliff`` directive finds commands through an entry-point
namespace.  ``baremetal-alloc`` has none on purpose (it must not scan
installed plugins at start-up): its commands live in a fixed table,
:data:`baremetal_allocclient.shell.COMMANDS`.  This directive reuses cliff's
rendering and only swaps where the commands come from.

Its one argument is the dotted path of a ``CommandManager`` subclass that
needs no constructor arguments; ``:application:`` and ``:ignored:`` work as
in ``autoprogram-cliff``.
"""

from __future__ import annotations

import importlib
from typing import Any

from cliff import sphinxext


class AutoprogramCliffTable(sphinxext.AutoprogramCliffDirective):
    """Document every command of a ``CommandManager`` built without args."""

    def _load_app(self) -> None:
        # The argument names a command manager, never an application.
        return None

    def _load_commands(self) -> dict[str, Any]:
        module_name, _, class_name = self.arguments[0].rpartition(".")
        factory = getattr(importlib.import_module(module_name), class_name)
        manager = factory()
        return {
            name: self._load_command(manager, name)
            for name in manager.commands
        }


def setup(app: Any) -> dict[str, Any]:
    app.setup_extension("cliff.sphinxext")
    app.add_directive("autoprogram-cliff-table", AutoprogramCliffTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
