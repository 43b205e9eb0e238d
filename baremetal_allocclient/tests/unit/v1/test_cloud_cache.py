"""The command line's cache of resolved clouds: it holds no secret, is
used only while what openstacksdk read is unchanged, and spares a run
the import of openstacksdk."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
import time
from typing import Any

import fixtures
import testtools

from baremetal_allocclient import shell
from baremetal_allocclient.v1 import cloud_cache, clouds

BASIC = """\
clouds:
  lab:
    auth_type: http_basic
    auth:
      endpoint: http://ironic.test:6385
      username: admin
      password: {password}
    baremetal_api_version: '1.78'
"""
KEYSTONE = """\
clouds:
  lab:
    auth:
      auth_url: http://keystone.test:5000/v3
      username: alice
      project_name: demo
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
"""


class CloudCacheTests(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        for name in list(os.environ):
            if name.startswith("OS_"):
                self.useFixture(fixtures.EnvironmentVariable(name))
        self.folder = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.EnvironmentVariable(
            "XDG_CACHE_HOME", os.path.join(self.folder, "cache")))
        self.useFixture(fixtures.EnvironmentVariable(cloud_cache.SWITCH))
        self.clouds = os.path.join(self.folder, "clouds.yaml")
        self.secure = os.path.join(self.folder, "secure.yaml")
        self.useFixture(fixtures.EnvironmentVariable(
            "OS_CLIENT_CONFIG_FILE", self.clouds))
        self.useFixture(fixtures.EnvironmentVariable(
            "OS_CLIENT_SECURE_FILE", self.secure))

    def _write(self, path: str, text: str) -> None:
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(text)
        # A later write in the same clock tick must still look changed.
        later = time.time() + len(text) % 7 + 1
        os.utime(path, (later, later))

    def _entries(self) -> list[str]:
        folder = cloud_cache.directory()
        return [os.path.join(folder, name) for name in os.listdir(folder)]

    def test_a_resolved_cloud_is_cached_without_its_secret(self) -> None:
        self._write(self.clouds, BASIC.format(password="s3cret-Pw"))
        first = shell.resolve_cloud("lab", {})
        self.assertEqual("s3cret-Pw", first.auth["password"])
        self.assertEqual("1.78", first.api_version)
        (entry,) = self._entries()
        with open(entry, encoding="utf-8") as stream:
            text = stream.read()
        self.assertNotIn("s3cret-Pw", text)
        self.assertEqual(["file", self.clouds],
                         json.loads(text)["secrets"]["password"])
        self.assertEqual(0o600, stat.S_IMODE(os.stat(entry).st_mode))
        self.assertEqual(0o700, stat.S_IMODE(
            os.stat(os.path.dirname(entry)).st_mode))
        self.assertEqual(first, cloud_cache.load("lab", {}))

    def test_a_changed_or_new_config_file_resolves_again(self) -> None:
        self._write(self.clouds, BASIC.format(password="one"))
        shell.resolve_cloud("lab", {})
        self._write(self.clouds, BASIC.format(password="two").replace(
            "ironic.test", "other.test"))
        self.assertIsNone(cloud_cache.load("lab", {}))
        again = shell.resolve_cloud("lab", {})
        self.assertEqual(("two", "http://other.test:6385"),
                         (again.auth["password"], again.auth["endpoint"]))
        # secure.yaml, absent so far, is read before clouds.yaml.
        self._write(self.secure, "clouds:\n  lab:\n    auth:\n"
                                 "      password: three\n")
        self.assertIsNone(cloud_cache.load("lab", {}))
        self.assertEqual("three",
                         shell.resolve_cloud("lab", {}).auth["password"])
        with open(max(self._entries(), key=os.path.getmtime),
                  encoding="utf-8") as stream:
            sources = json.load(stream)["secrets"]
        self.assertEqual(["file", self.secure], sources["password"])

    def test_secrets_given_or_in_the_environment_are_read_again(
            self) -> None:
        self._write(self.clouds, KEYSTONE)
        given = {"auth": {"password": "first"}}
        self.assertEqual("first",
                         shell.resolve_cloud("lab", given).auth["password"])
        # Another password on the command line: the same entry, its value.
        later = cloud_cache.load("lab", {"auth": {"password": "second"}})
        assert later is not None
        self.assertEqual("second", later.auth["password"])
        self.assertEqual("RegionOne", later.region_name)
        self.assertEqual(1, len(self._entries()))
        # Without it the loader has no password: no entry holds.
        self.assertIsNone(cloud_cache.load("lab", {}))

    def test_a_secret_of_unknown_origin_is_not_cached(self) -> None:
        resolved = clouds.ResolvedCloud(
            auth_type="http_basic",
            auth={"endpoint": "http://ironic.test", "username": "admin",
                  "password": "from-nowhere"})
        self._write(self.clouds, "clouds: {}\n")
        self.assertFalse(cloud_cache.store("lab", {}, resolved))
        self.assertFalse(os.path.isdir(cloud_cache.directory()))

    def test_the_switch_turns_it_off(self) -> None:
        self.useFixture(fixtures.EnvironmentVariable(cloud_cache.SWITCH, "0"))
        self._write(self.clouds, BASIC.format(password="p"))
        shell.resolve_cloud("lab", {})
        self.assertFalse(os.path.isdir(cloud_cache.directory()))

    def test_a_cached_run_does_not_import_openstacksdk(self) -> None:
        self._write(self.clouds, BASIC.format(password="p"))
        code = ("import sys; from baremetal_allocclient import shell; "
                "r = shell.resolve_cloud('lab', {}); r.session(); "
                "print(r.auth['password'], 'openstack' in sys.modules)")
        runs: list[Any] = [subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True,
            timeout=120, check=True, cwd=tempfile.gettempdir())
            for _ in range(2)]
        self.assertEqual(["p True", "p False"],
                         [run.stdout.strip() for run in runs])
