"""The OpenStackClient plugin hooks and the command-override policy."""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys
import types
from unittest import mock

import testtools

from baremetal_allocclient.osc import plugin


def _duplicate_record(name: str, modules: str) -> logging.LogRecord:
    # The shape of cliff.commandmanager's duplicate-command warning.
    return logging.LogRecord(
        "cliff.commandmanager", logging.WARNING, __file__, 1,
        "found duplicate implementations of the %(name)r command in the "
        "following modules: %(modules)s",
        ({"name": name, "modules": modules},), None,
    )


class TestImportCost(testtools.TestCase):
    def test_plugin_import_loads_no_sdk_or_keystoneauth(self) -> None:
        code = (
            "import sys, baremetal_allocclient.osc.plugin\n"
            "heavy = [m for m in sys.modules if m.split('.')[0] in "
            "('keystoneauth1', 'requests', 'openstack', 'cliff') or "
            "m.startswith('baremetal_allocclient.v1')]\n"
            "print(','.join(sorted(heavy)))\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True,
            check=True,
        )
        self.assertEqual("", out.stdout.strip())


class TestOverrideWarningFilter(testtools.TestCase):
    def test_drops_only_duplicates_of_our_commands(self) -> None:
        filt = plugin._OverrideWarningFilter()
        ours = ("ironicclient.osc.v1.baremetal_allocation:ListBaremetal"
                "Allocation, baremetal_allocclient.osc.v1.allocation:"
                "ListAllocations")
        self.assertFalse(
            filt.filter(_duplicate_record("baremetal allocation list", ours))
        )
        # Within openstack.baremetal.v1 python-ironicclient may load after
        # us; openstack.extension loads ours again, last.
        reversed_order = ", ".join(reversed(ours.split(", ")))
        self.assertFalse(
            filt.filter(_duplicate_record("baremetal allocation list",
                                          reversed_order))
        )
        theirs = "ironicclient.osc.v1.x:A, other.module:List"
        self.assertTrue(
            filt.filter(_duplicate_record("baremetal allocation list",
                                          theirs))
        )
        self.assertTrue(
            filt.filter(_duplicate_record("server list", ours))
        )
        plain = logging.LogRecord("cliff.commandmanager", logging.WARNING,
                                  __file__, 1, "other %s", ("x",), None)
        self.assertTrue(filt.filter(plain))

    def test_installed_on_cliffs_logger_once(self) -> None:
        plugin._install_override_warning_filter()
        logger = logging.getLogger("cliff.commandmanager")
        installed = [f for f in logger.filters
                     if isinstance(f, plugin._OverrideWarningFilter)]
        self.assertEqual(1, len(installed))


class TestVersionOption(testtools.TestCase):
    def test_added_when_nobody_else_does(self) -> None:
        parser = argparse.ArgumentParser()
        with mock.patch.dict(sys.modules, {
            "openstackclient.common.clientmanager":
                types.SimpleNamespace(PLUGIN_MODULES=[plugin]),
        }):
            plugin.build_option_parser(parser)
        options = parser.parse_args(["--os-baremetal-api-version", "1.58"])
        self.assertEqual("1.58", options.os_baremetal_api_version)

    def test_not_added_when_ironicclient_adds_it(self) -> None:
        ironic = types.SimpleNamespace(
            __name__="ironicclient.osc.plugin",
            API_VERSION_OPTION="os_baremetal_api_version",
        )
        parser = argparse.ArgumentParser()
        with mock.patch.dict(sys.modules, {
            "openstackclient.common.clientmanager":
                types.SimpleNamespace(PLUGIN_MODULES=[plugin, ironic]),
        }):
            plugin.build_option_parser(parser)
        self.assertNotIn("--os-baremetal-api-version",
                         parser._option_string_actions)

    def test_not_added_twice(self) -> None:
        parser = argparse.ArgumentParser()
        parser.add_argument("--os-baremetal-api-version")
        plugin.build_option_parser(parser)  # must not raise a conflict

    def test_check_api_version(self) -> None:
        self.assertTrue(plugin.check_api_version("1.60"))
        self.assertTrue(plugin.check_api_version("latest"))
        self.assertRaises(ValueError, plugin.check_api_version, "one")

    def test_ironicclient_latest_flag(self) -> None:
        flag = types.SimpleNamespace(OS_BAREMETAL_API_LATEST=True)
        with mock.patch.dict(sys.modules,
                             {"ironicclient.osc.plugin": flag}):
            self.assertTrue(plugin._ironicclient_means_latest())
            flag.OS_BAREMETAL_API_LATEST = False
            self.assertFalse(plugin._ironicclient_means_latest())


class TestMakeClient(testtools.TestCase):
    def test_uses_osc_session_and_requested_version(self) -> None:
        instance = mock.Mock(_api_version={plugin.API_NAME: "1.58"})
        with mock.patch.dict(sys.modules,
                             {"ironicclient.osc.plugin": None}), \
                mock.patch("baremetal_allocclient.v1.Client."
                           "from_client_manager") as factory:
            plugin.make_client(instance)
        factory.assert_called_once_with(instance, api_version=(1, 58))

    def test_ironicclient_latest_means_negotiate(self) -> None:
        instance = mock.Mock(_api_version={plugin.API_NAME: "1.99"})
        flag = types.SimpleNamespace(OS_BAREMETAL_API_LATEST=True)
        with mock.patch.dict(sys.modules,
                             {"ironicclient.osc.plugin": flag}), \
                mock.patch("baremetal_allocclient.v1.Client."
                           "from_client_manager") as factory:
            plugin.make_client(instance)
        factory.assert_called_once_with(instance, api_version=None)


class TestDescriptions(testtools.TestCase):
    def test_every_command_summary_is_one_whole_sentence(self) -> None:
        """cliff shows a docstring's first line in ``openstack --help``."""
        from baremetal_allocclient import shell

        for name in shell.COMMANDS:
            cls = shell._LazyCommand(name, shell.COMMANDS[name]).load()
            first = (cls.__doc__ or "").strip().splitlines()[0]
            self.assertRegex(first, r"^[A-Z].*\.$", name)
            self.assertEqual(1, first.count(". ") + 1, name)
            rest = (cls.__doc__ or "").strip().splitlines()[1:2]
            self.assertIn(rest, ([], [""]), f"{name}: {first!r} goes on")


class TestSwitch(testtools.TestCase):
    def test_switch_picks_the_implementation(self) -> None:
        from baremetal_allocclient.osc import commands
        from baremetal_allocclient.osc.v1 import allocation

        for value in ("", "baremetal-allocclient", "bogus"):
            with mock.patch.dict("os.environ",
                                 {commands.SWITCH: value}):
                self.assertIs(allocation.ListAllocations,
                              commands.ListAllocations)
        with mock.patch.dict("os.environ",
                             {commands.SWITCH: "ironicclient"}):
            cls = commands.ShowAllocation
        self.assertEqual("ironicclient.osc.v1.baremetal_allocation",
                         cls.__module__)
        self.assertRaises(AttributeError, getattr, commands, "Nope")
