"""baremetal-alloc: connection options, command table, import cost."""

from __future__ import annotations

import argparse
import base64
import subprocess
import sys
from typing import Any

import fixtures
import requests_mock
import testtools

from baremetal_allocclient import shell


def _options(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    shell.add_connection_options(parser, argv)
    return parser.parse_args(list(argv))


class TestConnectionDecisions(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        for name in ("OS_CLOUD", "OS_ENDPOINT", "OS_AUTH_TYPE", "OS_AUTH_URL",
                     "OS_USERNAME", "OS_PASSWORD", "OS_CACERT",
                     "OS_BAREMETAL_ENDPOINT", "OS_BAREMETAL_API_VERSION"):
            self.useFixture(fixtures.EnvironmentVariable(name))

    def test_auth_type_defaults(self) -> None:
        self.assertEqual("none", shell.effective_auth_type(_options()))
        self.assertEqual("password", shell.effective_auth_type(
            _options("--os-auth-url", "http://k:5000")))
        self.assertEqual("http_basic", shell.effective_auth_type(
            _options("--os-auth-type", "http_basic")))

    def test_connection_problems(self) -> None:
        cases = [
            ((), "--os-endpoint"),
            (("--os-auth-type", "http_basic", "--os-endpoint", "http://e"),
             "--os-username"),
            (("--os-auth-type", "token"), "--os-auth-url"),
        ]
        for argv, mentioned in cases:
            problem = shell.connection_problem(_options(*argv))
            self.assertIn(mentioned, str(problem), argv)
        for argv in (
            ("--os-endpoint", "http://e"),
            ("--os-cloud", "mycloud"),
            ("--os-auth-type", "http_basic", "--os-endpoint", "http://e",
             "--os-username", "u", "--os-password", "p"),
            ("--os-auth-url", "http://k:5000", "--os-username", "u"),
        ):
            self.assertIsNone(shell.connection_problem(_options(*argv)))

    def test_environment_supplies_defaults(self) -> None:
        env = fixtures.EnvironmentVariable
        self.useFixture(env("OS_ENDPOINT", "http://from-env"))
        self.useFixture(env("OS_BAREMETAL_API_VERSION", "1.58"))
        options = _options()
        self.assertEqual("http://from-env", options.os_endpoint)
        self.assertEqual("1.58", options.os_baremetal_api_version)
        self.assertEqual("http://flag",
                         _options("--os-endpoint", "http://flag").os_endpoint)

    def test_verify(self) -> None:
        self.assertIs(True, shell.verify_setting(_options()))
        self.assertIs(False, shell.verify_setting(_options("--insecure")))
        self.assertEqual("/ca.pem", shell.verify_setting(
            _options("--os-cacert", "/ca.pem")))

    def test_cloud_overrides_only_what_was_given(self) -> None:
        self.assertEqual({}, shell.cloud_overrides(_options("--os-cloud",
                                                            "c")))
        overrides = shell.cloud_overrides(_options(
            "--os-cloud", "c", "--os-endpoint", "http://e",
            "--os-auth-type", "http_basic", "--os-username", "u",
            "--os-password", "p", "--insecure", "--os-region-name", "r"))
        self.assertEqual({
            "auth_type": "http_basic",
            "baremetal_endpoint_override": "http://e",
            "auth": {"username": "u", "password": "p",
                     "endpoint": "http://e"},
            "region_name": "r",
            "verify": False,
        }, overrides)


class TestCommandTable(testtools.TestCase):
    def test_every_verb_resolves_lazily(self) -> None:
        manager = shell.FixedCommandManager()
        for verb in ("create", "list", "get", "show", "delete", "set",
                     "unset"):
            cls, name, rest = manager.find_command([verb, "--x"])
            self.assertEqual(verb, name)
            self.assertEqual(["--x"], rest)
            self.assertTrue(cls.__module__.startswith(
                "baremetal_allocclient.osc.v1."))
        self.assertIs(manager.find_command(["get"])[0],
                      manager.find_command(["show"])[0])

    def test_same_classes_as_the_plugin_entry_points(self) -> None:
        import configparser
        import os

        setup_cfg = os.path.join(
            os.path.dirname(shell.__file__), os.pardir, "setup.cfg")
        config = configparser.ConfigParser()
        config.read(setup_cfg)
        lines = config["entry_points"]["openstack.extension"].split("\n")
        registered = {}
        for line in filter(None, (x.strip() for x in lines)):
            name, _, target = line.partition("=")
            if not name.startswith("baremetal_allocation_"):
                continue  # "command list" is OpenStackClient's verb
            # osc/commands.py picks our class of the same name.
            registered[name.strip().rsplit("_", 1)[1]] = target.strip(
                ).replace("baremetal_allocclient.osc.commands:",
                          "baremetal_allocclient.osc.v1.allocation:")
        self.assertEqual(dict(shell.COMMANDS), registered)

    def test_shell_import_is_light(self) -> None:
        code = (
            "import sys, baremetal_allocclient.shell\n"
            "heavy = [m for m in sys.modules if m.split('.')[0] in "
            "('keystoneauth1', 'requests', 'openstack', 'osc_lib', "
            "'yaml') or m.startswith('baremetal_allocclient.v1')]\n"
            "print(','.join(sorted(heavy)))\n"
        )
        out = subprocess.run([sys.executable, "-c", code],
                             capture_output=True, text=True, check=True)
        self.assertEqual("", out.stdout.strip())


class TestBuildClient(testtools.TestCase):
    """The SDK client each authentication choice produces."""

    ENDPOINT = "http://bm.example:6385"

    def setUp(self) -> None:
        super().setUp()
        for name in ("OS_CLOUD", "OS_ENDPOINT", "OS_AUTH_TYPE", "OS_AUTH_URL",
                     "OS_USERNAME", "OS_PASSWORD"):
            self.useFixture(fixtures.EnvironmentVariable(name))

    def first_request_headers(self, *argv: str) -> Any:
        client = shell.build_client(_options(*argv))
        with requests_mock.Mocker() as mocker:
            mocker.get(
                self.ENDPOINT + "/v1/allocations",
                json={"allocations": []},
                headers={
                    "X-OpenStack-Ironic-API-Minimum-Version": "1.1",
                    "X-OpenStack-Ironic-API-Maximum-Version": "1.60",
                },
            )
            self.assertEqual([], list(client.list_allocations()))
            self.assertEqual(1, mocker.call_count)  # one request, no probe
            return mocker.request_history[0].headers

    def test_no_auth(self) -> None:
        headers = self.first_request_headers("--os-endpoint", self.ENDPOINT)
        self.assertNotIn("Authorization", headers)
        self.assertNotIn("X-Auth-Token", headers)

    def test_http_basic(self) -> None:
        headers = self.first_request_headers(
            "--os-endpoint", self.ENDPOINT, "--os-auth-type", "http_basic",
            "--os-username", "admin", "--os-password", "s3cret")
        expected = base64.b64encode(b"admin:s3cret").decode()
        self.assertEqual(f"Basic {expected}", headers["Authorization"])

    def test_pinned_version_is_sent(self) -> None:
        headers = self.first_request_headers(
            "--os-endpoint", self.ENDPOINT,
            "--os-baremetal-api-version", "1.58")
        self.assertEqual("1.58", headers["X-OpenStack-Ironic-API-Version"])

    def test_unknown_auth_type(self) -> None:
        self.assertRaises(
            shell.UsageError, shell.build_client,
            _options("--os-auth-type", "no-such-plugin", "--os-auth-url",
                     "http://keystone.example:5000"))


class TestNoPackageScan(testtools.TestCase):
    """baremetal-alloc looks nothing up among installed entry points."""

    def test_formatter_table_is_cliffs(self) -> None:
        from importlib.metadata import entry_points

        for group, table in shell.FORMATTERS.items():
            installed = tuple((ep.name, ep.value)
                              for ep in entry_points(group=group)
                              if ep.value.startswith("cliff."))
            self.assertEqual(installed, table, group)

    def test_commands_do_not_scan(self) -> None:
        from stevedore import extension

        _keep_collector(self)
        self.useFixture(fixtures.EnvironmentVariable("OS_CLOUD"))
        self.useFixture(fixtures.MockPatchObject(
            extension.ExtensionManager, "list_entry_points",
            side_effect=AssertionError("scanned entry points")))
        stdout = self.useFixture(fixtures.StringStream("stdout"))
        self.useFixture(fixtures.MonkeyPatch("sys.stdout", stdout.stream))
        endpoint = "http://bm.example:6385"
        with requests_mock.Mocker() as mocker:
            mocker.get(endpoint + "/v1/allocations",
                       json={"allocations": []})
            for output in ("table", "json", "value", "yaml", "csv"):
                self.assertEqual(0, shell.main(
                    ["--os-endpoint", endpoint, "list", "-f", output]))
        stdout.stream.flush()
        self.assertIn("[]", stdout.getDetails()["stdout"].as_text())

    def test_formatters_as_cliff_loads_them(self) -> None:
        import stevedore

        for group in shell.FORMATTERS:
            ours = shell.formatter_manager(group)
            cliffs = stevedore.ExtensionManager(group, invoke_on_load=True)
            self.assertEqual(
                [(e.name, type(e.obj)) for e in cliffs
                 if e.entry_point.value.startswith("cliff.")],
                [(e.name, type(e.obj)) for e in ours])

    def test_version_only_when_asked(self) -> None:
        self.useFixture(fixtures.MockPatch(
            "baremetal_allocclient.shell._version",
            side_effect=AssertionError("looked up")))
        app = shell.AllocationApp([])
        app.parser.parse_known_args(["list"])
        self.useFixture(fixtures.MockPatch(
            "baremetal_allocclient.shell._version", return_value="9.9"))
        stdout = self.useFixture(fixtures.StringStream("stdout"))
        self.useFixture(fixtures.MonkeyPatch("sys.stdout", stdout.stream))
        with testtools.ExpectedException(SystemExit, "0"):
            app.parser.parse_known_args(["--version"])
        stdout.stream.flush()
        from cliff import app as cliff_app

        self.assertEqual(f"{cliff_app.App.NAME} 9.9\n",
                         stdout.getDetails()["stdout"].as_text())


def _keep_collector(test: testtools.TestCase) -> None:
    """shell.main turns the garbage collector off on its way out (the
    process ends); keep it on in the test process."""
    import gc

    test.useFixture(fixtures.MockPatch(
        "baremetal_allocclient.shell._quick_exit"))
    test.addCleanup(gc.enable)
    test.addCleanup(gc.unfreeze)


class TestCollector(testtools.TestCase):
    """No garbage collection during start-up; as usual once the client
    exists (a command may wait for hours)."""

    def test_off_until_the_client_exists(self) -> None:
        import gc

        _keep_collector(self)
        self.useFixture(fixtures.EnvironmentVariable("OS_CLOUD"))
        during_start_up = []
        real_build = shell.build_client

        def build(options: argparse.Namespace) -> Any:
            during_start_up.append(gc.isenabled())
            return real_build(options)

        self.useFixture(fixtures.MockPatch(
            "baremetal_allocclient.shell.build_client", side_effect=build))
        stdout = self.useFixture(fixtures.StringStream("stdout"))
        self.useFixture(fixtures.MonkeyPatch("sys.stdout", stdout.stream))
        after = []
        endpoint = "http://bm.example:6385"
        with requests_mock.Mocker() as mocker:
            mocker.get(endpoint + "/v1/allocations",
                       json={"allocations": []})
            mocker.add_matcher(lambda request: after.append(gc.isenabled()))
            self.assertEqual(0, shell.main(
                ["--os-endpoint", endpoint, "list", "-f", "json"]))
        self.assertEqual([False], during_start_up)
        self.assertEqual([True], after)
