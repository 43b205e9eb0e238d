"""Build the sdist and wheel from a fresh clone and install the wheel.

CI clones the repository, and pbr takes the version from git, so the build
starts from a ``git clone`` of the committed tree (uncommitted files are
not part of a release either).  ``python -m build`` makes the sdist and
then the wheel *from the sdist*, so a file missing from the sdist shows up
as a broken wheel.  The wheel is installed into a new virtualenv with its
dependencies from the package index (pip's cache keeps that quick), and
the three console scripts must run from there.

Slow (a build and a virtualenv install, about a minute), hence one class
whose set-up does the expensive part once.
"""

from __future__ import annotations

import email.parser
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from typing import ClassVar

import testtools

from baremetal_allocclient.server.db.engine import head_revision

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))
DIST_NAME = "baremetal_allocclient"


def _run(args: list[str], cwd: str | None = None, timeout: float = 600,
         env: dict[str, str] | None = None) -> str:
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True,
                            timeout=timeout, env=env, check=False)
    if result.returncode != 0:
        raise AssertionError(
            f"{' '.join(args)} exited {result.returncode}:\n"
            f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result.stdout


class PackagingTest(testtools.TestCase):
    """sdist + wheel from a clone, twine check, install, run."""

    tmp: ClassVar[str]
    src: ClassVar[str]
    dist: ClassVar[str]
    venv_bin: ClassVar[str]
    plain_bin: ClassVar[str]
    env: ClassVar[dict[str, str]]
    wheel: ClassVar[str]
    sdist: ClassVar[str]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp(prefix="bm-alloc-packaging-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.src = os.path.join(cls.tmp, "src")
        cls.dist = os.path.join(cls.tmp, "dist")
        # pbr must compute the version from git, not from the environment.
        cls.env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("PBR_", "OS_"))}
        _run(["git", "clone", "--quiet", REPO, cls.src], env=cls.env)
        _run([sys.executable, "-m", "build", "--outdir", cls.dist, cls.src],
             env=cls.env)
        (cls.wheel,) = [os.path.join(cls.dist, f)
                        for f in os.listdir(cls.dist) if f.endswith(".whl")]
        (cls.sdist,) = [os.path.join(cls.dist, f)
                        for f in os.listdir(cls.dist)
                        if f.endswith(".tar.gz")]
        venv = os.path.join(cls.tmp, "venv")
        _run([sys.executable, "-m", "venv", venv])
        cls.venv_bin = os.path.join(venv, "bin")
        # --no-compile: byte-compiling a hundred dependencies at install
        # was most of the class's time; nothing here needs it.
        _run([os.path.join(cls.venv_bin, "python"), "-m", "pip", "install",
              "--quiet", "--disable-pip-version-check", "--no-compile",
              f"{cls.wheel}[osc,server]"], env=cls.env, timeout=900)
        # The plain install: the SDK and baremetal-alloc, no extra.
        plain = os.path.join(cls.tmp, "plain")
        _run([sys.executable, "-m", "venv", plain])
        cls.plain_bin = os.path.join(plain, "bin")
        _run([os.path.join(cls.plain_bin, "python"), "-m", "pip", "install",
              "--quiet", "--disable-pip-version-check", "--no-compile",
              cls.wheel], env=cls.env, timeout=900)

    def _metadata(self) -> email.message.Message:
        with zipfile.ZipFile(self.wheel) as wheel:
            (name,) = [n for n in wheel.namelist()
                       if n.endswith(".dist-info/METADATA")]
            text = wheel.read(name).decode("utf-8")
        return email.parser.Parser().parsestr(text)

    def test_twine_accepts_both_artifacts(self) -> None:
        out = _run([sys.executable, "-m", "twine", "check", "--strict",
                    self.wheel, self.sdist])
        self.assertEqual(2, out.count("PASSED"), out)

    def test_version_comes_from_git(self) -> None:
        expected = _run([sys.executable, "setup.py", "--version"],
                        cwd=self.src, env=self.env).strip().splitlines()[-1]
        metadata = self._metadata()
        self.assertEqual(expected, metadata["Version"])
        self.assertIn(f"{DIST_NAME}-{expected}-py3-none-any.whl",
                      self.wheel)
        tags = _run(["git", "tag", "--merged", "HEAD"], cwd=self.src).split()
        shallow = _run(["git", "rev-parse", "--is-shallow-repository"],
                       cwd=self.src).strip() == "true"
        if not tags and not shallow:
            # Untagged: a dev release counting commits.  (A shallow clone,
            # as some CI systems make, has no history for pbr to count.)
            self.assertRegex(expected, r"^\d+\.\d+\.\d+\.dev[1-9]\d*$")
        out = _run([os.path.join(self.venv_bin, "baremetal-alloc"),
                    "--version"])
        self.assertEqual(f"baremetal-alloc {expected}", out.strip())

    def test_metadata(self) -> None:
        metadata = self._metadata()
        self.assertEqual("baremetal-allocclient", metadata["Name"])
        self.assertEqual(">=3.10", metadata["Requires-Python"])
        self.assertEqual("text/markdown",
                         metadata["Description-Content-Type"])
        self.assertIn("# baremetal-allocclient", metadata.get_payload())
        extras = metadata.get_all("Provides-Extra") or []
        for extra in ("server", "postgresql", "mysql"):
            self.assertIn(extra, extras)
        requires = metadata.get_all("Requires-Dist") or []
        # SDK and CLI users do not pull the server's dependencies.
        server_only = [r for r in requires if r.startswith("SQLAlchemy")]
        self.assertTrue(server_only)
        for requirement in server_only:
            self.assertIn('extra == "server"', requirement)

    def test_wheel_contents(self) -> None:
        with zipfile.ZipFile(self.wheel) as wheel:
            names = set(wheel.namelist())
            (entry_points,) = [n for n in names
                               if n.endswith(".dist-info/entry_points.txt")]
            entries = wheel.read(entry_points).decode("utf-8")
        for path in (
            "baremetal_allocclient/py.typed",
            "baremetal_allocclient/server/db/migrations/env.py",
            "baremetal_allocclient/server/db/migrations/script.py.mako",
            "baremetal_allocclient/server/db/migrations/versions/"
            "0001_initial.py",
            "baremetal_allocclient/v1/client.py",
            "baremetal_allocclient/osc/v1/allocation.py",
        ):
            self.assertIn(path, names)
        for line in (
            "baremetal-alloc = baremetal_allocclient.shell:main",
            "baremetal-alloc-server = baremetal_allocclient.server.cmd:main",
            "baremetal_allocation = baremetal_allocclient.osc.plugin",
            "baremetal_allocation_create = "
            "baremetal_allocclient.osc.commands:CreateAllocation",
            "baremetal_allocation_get = "
            "baremetal_allocclient.osc.v1.allocation:ShowAllocation",
        ):
            self.assertIn(line, entries)

    def test_sdist_contents(self) -> None:
        with tarfile.open(self.sdist) as sdist:
            names = {name.split("/", 1)[1] for name in sdist.getnames()
                     if "/" in name}
        for path in ("PKG-INFO", "AUTHORS", "ChangeLog", "README.md",
                     "setup.cfg", "requirements.txt", "doc/source/conf.py",
                     "doc/source/examples/inventory.yaml"):
            self.assertIn(path, names)
        self.assertTrue(any(re.match(r"releasenotes/notes/.+\.yaml$", n)
                            for n in names))

    def test_console_scripts_run_from_the_wheel(self) -> None:
        for args, words in (
            (["baremetal-alloc", "--help"], "--os-endpoint"),
            (["openstack", "baremetal", "allocation", "create", "--help"],
             "--delete-on-failure"),
            (["baremetal-alloc-server", "--help"], "{serve,db,enroll}"),
        ):
            executable = os.path.join(self.venv_bin, args[0])
            out = _run([executable, *args[1:]], env=self.env)
            self.assertIn(words, out, args)

    def test_installed_server_carries_its_migrations(self) -> None:
        db = "sqlite:///" + os.path.join(self.tmp, "installed.sqlite")
        out = _run([os.path.join(self.venv_bin, "baremetal-alloc-server"),
                    "db", "upgrade", "--db", db], env=self.env)
        self.assertIn(
            f"Database schema is at revision {head_revision()}", out)

    def test_plain_install_is_light(self) -> None:
        """Without extras: no OpenStackClient, no server dependencies; the
        SDK imports and baremetal-alloc runs."""
        python = os.path.join(self.plain_bin, "python")
        listed = _run([python, "-m", "pip", "list", "--format", "freeze",
                       "--disable-pip-version-check"])
        names = {line.split("==")[0].lower() for line in listed.split()}
        for heavy in ("python-openstackclient", "osc-lib",
                      "python-manilaclient", "sqlalchemy", "cheroot"):
            self.assertNotIn(heavy, names)
        for needed in ("keystoneauth1", "openstacksdk", "cliff"):
            self.assertIn(needed, names)
        _run([python, "-c", "import baremetal_allocclient.v1 as v1; "
              "v1.Client; v1.NotFound"])
        out = _run([os.path.join(self.plain_bin, "baremetal-alloc"),
                    "--help"])
        self.assertIn("capacity", out)
        self.assertFalse(os.path.exists(
            os.path.join(self.plain_bin, "openstack")))
