"""Every option of every command has help text.

Walks the parsers of ``baremetal-alloc`` (its global options and each
command's) and of ``baremetal-alloc-server`` (each sub-command's).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import testtools

from baremetal_allocclient import shell


def _undocumented(parser: argparse.ArgumentParser, where: str
                  ) -> Iterator[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _undocumented(sub, f"{where} {name}")
            continue
        if action.help is argparse.SUPPRESS:
            continue
        if not (action.help or "").strip():
            flags = "/".join(action.option_strings) or action.dest
            yield f"{where}: {flags}"


class TestHelpText(testtools.TestCase):
    def test_baremetal_alloc(self) -> None:
        app = shell.AllocationApp()
        missing = list(_undocumented(app.parser, "baremetal-alloc"))
        for name, target in shell.COMMANDS.items():
            cls = shell._LazyCommand(name, target).load()
            parser = cls(app, None).get_parser(f"baremetal-alloc {name}")
            missing.extend(_undocumented(parser, f"baremetal-alloc {name}"))
        self.assertEqual([], missing)

    def test_baremetal_alloc_server(self) -> None:
        from baremetal_allocclient.server import cmd

        self.assertEqual(
            [], list(_undocumented(cmd._parser(), "baremetal-alloc-server")))
