"""``baremetal-alloc list`` imports only what listing needs.

The installed console script runs in a subprocess, through a wrapper that
writes the names in ``sys.modules`` to a file at exit, against the
reference server on loopback. (``-X importtime`` would not do: it misses
the modules imported with ``importlib.import_module``, as the command
modules are.) The modules of other verbs (create's
modes and request options, the SDK's request, constraints, leases,
groups, capacity, explain, completion, the progress reporter),
authentication plugins, openstacksdk's config loader and, unless a table
is printed, the table libraries must be absent.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import fixtures
import testtools

from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.tests.functional.cli import clirunner

#: Never imported by ``list``, whatever the output format.
NOT_FOR_LIST = (
    "baremetal_allocclient.osc.v1.create",
    "baremetal_allocclient.osc.v1.create_modes",
    "baremetal_allocclient.osc.v1.constraint_options",
    "baremetal_allocclient.osc.v1.lease_options",
    "baremetal_allocclient.osc.v1.request_options",
    "baremetal_allocclient.osc.v1.leases",
    "baremetal_allocclient.osc.v1.capacity",
    "baremetal_allocclient.osc.v1.explain",
    "baremetal_allocclient.osc.v1.completion",
    "baremetal_allocclient.osc.progress",
    "baremetal_allocclient.osc.plugin",
    "baremetal_allocclient.osc.commands",
    # Authentication plugins and clouds.yaml: not with --os-endpoint alone.
    "keystoneauth1.loading",
    "keystoneauth1.identity",
    "openstack",
    "osc_lib",
    # cliff's interactive mode and pager-less extras.
    "cmd2",
    "rich",
)
#: Imported only to print a table.
TABLE_ONLY = ("wcwidth",)

#: The SDK's workflows and extension models, imported by ``v1.client``
#: only when a method that needs them is called.  (``v1.waiting`` is not
#: among them: it declares the types of ``Client``'s signatures and
#: imports only the standard library.)
SDK_LAZY = (
    "baremetal_allocclient.v1.request",
    "baremetal_allocclient.v1.grouping",
    "baremetal_allocclient.v1.reservation",
    "baremetal_allocclient.v1.queueing",
    "baremetal_allocclient.groups",
    "baremetal_allocclient.constraints",
)


#: Runs the script named first in its arguments with the rest; at exit
#: writes every module name in ``sys.modules`` to the file named by
#: ``MODULES_FILE``.
WRAPPER = """\
import atexit, os, runpy, sys


def dump():
    with open(os.environ["MODULES_FILE"], "w", encoding="utf-8") as out:
        out.write("\\n".join(sorted(sys.modules)))


atexit.register(dump)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def imported_modules(*args: str, endpoint: str | None = None,
                     env: dict[str, str] | None = None
                     ) -> tuple[set[str], str]:
    """The modules a ``baremetal-alloc`` run imported, and its stdout
    (``--os-endpoint endpoint`` when given, ``env`` added)."""
    script = os.path.join(clirunner.BIN_DIR, clirunner.STANDALONE)
    where = ["--os-endpoint", endpoint] if endpoint else []
    with tempfile.TemporaryDirectory() as tmp:
        listing = os.path.join(tmp, "modules")
        proc = subprocess.run(
            [sys.executable, "-c", WRAPPER, script, *where, *args],
            capture_output=True, text=True, timeout=120, check=False,
            env=clirunner.clean_env({"MODULES_FILE": listing, **(env or {})}),
        )
        if proc.returncode != 0:
            raise AssertionError(
                f"exit {proc.returncode}: {proc.stderr}")
        with open(listing, encoding="utf-8") as stream:
            return set(stream.read().split("\n")), proc.stdout


def imported(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """The ``names`` (or their submodules) among ``modules``."""
    return sorted(
        name for name in names
        if any(m == name or m.startswith(name + ".") for m in modules))


class TestListImports(testtools.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.target = targets.reference_target()
        cls.rc = targets.unique("imports")
        cls.name = targets.unique("listed")
        cls.target.expect(201, "POST", "/v1/allocations", {
            "resource_class": cls.rc, "name": cls.name})

    def run_list(self, *args: str) -> set[str]:
        modules, out = imported_modules(
            "list", "--resource-class", self.rc, *args,
            endpoint=self.target.endpoint)
        self.assertIn(self.name, out)
        # The run did list: the command and its column registry loaded.
        self.assertIn("baremetal_allocclient.osc.v1.allocation", modules)
        self.assertIn("baremetal_allocclient.osc.v1.columns", modules)
        return modules

    def test_value_format(self) -> None:
        modules = self.run_list("-f", "value")
        self.assertEqual([], imported(modules, NOT_FOR_LIST + TABLE_ONLY))

    def test_table(self) -> None:
        modules = self.run_list()
        self.assertEqual([], imported(modules, NOT_FOR_LIST))

    def test_sdk_modules_not_imported(self) -> None:
        modules = self.run_list("-f", "value")
        self.assertEqual([], imported(modules, SDK_LAZY))

    def test_a_cloud_of_clouds_yaml_is_loaded_once(self) -> None:
        """With ``OS_CLOUD``, the first run resolves the cloud through
        openstacksdk and caches it (no secret); the next one lists
        without importing openstacksdk or keystoneauth1's loader."""
        folder = self.useFixture(fixtures.TempDir()).path
        clouds = os.path.join(folder, "clouds.yaml")
        with open(clouds, "w", encoding="utf-8") as stream:
            stream.write("clouds:\n  lab:\n    auth_type: none\n"
                         "    auth:\n"
                         f"      endpoint: {self.target.endpoint}\n")
        env = {"OS_CLOUD": "lab", "OS_CLIENT_CONFIG_FILE": clouds,
               "XDG_CACHE_HOME": os.path.join(folder, "cache")}
        first, out = imported_modules(
            "list", "--resource-class", self.rc, "-f", "value", env=env)
        self.assertIn(self.name, out)
        self.assertEqual(["openstack"], imported(first, ("openstack",)))
        again, out = imported_modules(
            "list", "--resource-class", self.rc, "-f", "value", env=env)
        self.assertIn(self.name, out)
        self.assertEqual([], imported(again, NOT_FOR_LIST + TABLE_ONLY))
