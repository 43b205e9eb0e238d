"""``ansible-test sanity`` on the collection.

ansible-test wants the collection at ``ansible_collections/NS/NAME`` in a
tree of its own (it lists the files with git), so the test copies it into
a temporary one.  It runs every sanity test that needs no network, Docker
or other tool: ``shellcheck`` and ``pslint`` (PowerShell) are left out
(the collection has no shell or PowerShell file).

ansible-test runs each sanity test in a virtualenv of its own, made once
and kept in ``~/.ansible/test/venv`` (the first run makes about eight,
which takes minutes; later ones reuse them).  It puts pip into them with
a get-pip script it downloads from ci-files.testing.ansible.com unless
one is in ``~/.ansible/test/cache``; on a machine without that access
:func:`offline_bootstrap` puts there a stand-in that uses the standard
library's ``ensurepip`` and then pip with the configured package index.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import testtools

from baremetal_allocclient.tests.functional.ansible_collection import (
    _ansible,
)

#: Sanity tests that need a tool this machine may not have, for files the
#: collection does not have.
SKIPPED = ("shellcheck", "pslint")

#: The pip that the pinned ansible-test (ansible-core 2.19) bootstraps
#: its virtualenvs with, which names its get-pip script.
BOOTSTRAP_PIP = "24.2"

#: What ansible-test's pip bootstrap runs instead of get-pip (see above).
GET_PIP_STAND_IN = '''\
"""Stand-in for get-pip written by baremetal-allocclient's tests: the
standard library's ensurepip, then pip installing what ansible-test asked
for from the configured package index."""
import subprocess
import sys

subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"])
args = [arg for arg in sys.argv[1:]
        if arg not in ("--no-setuptools", "--no-wheel")]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", *args]))
'''


def offline_bootstrap() -> None:
    """Put the get-pip stand-in where ansible-test looks first, unless
    a bootstrap script is there already."""
    path = os.path.expanduser(
        f"~/.ansible/test/cache/get_pip_{BOOTSTRAP_PIP.replace('.', '_')}.py")
    if os.path.exists(path):
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as handle:
        handle.write(GET_PIP_STAND_IN)
    os.replace(path + ".tmp", path)


def copy_as_collection(root: str) -> str:
    """The collection copied to ``root/ansible_collections/NS/NAME`` and
    committed to a new git repository there; that directory."""
    where = os.path.join(root, "ansible_collections", _ansible.NAMESPACE,
                         _ansible.NAME)
    shutil.copytree(_ansible.SOURCE, where, ignore=shutil.ignore_patterns(
        "tests/output", "__pycache__", "*.tar.gz"))
    for argv in (["git", "init", "-q"], ["git", "add", "-A"],
                 ["git", "-c", "user.name=test", "-c",
                  "user.email=test@example.com", "commit", "-q", "-m",
                  "collection"]):
        subprocess.run(argv, cwd=where, check=True, capture_output=True)
    return where


class TestAnsibleTestSanity(testtools.TestCase):
    """Every applicable sanity test passes."""

    def test_sanity(self) -> None:
        _ansible.ansible_bin()
        offline_bootstrap()
        root = tempfile.mkdtemp(prefix="baremetal-alloc-sanity-")
        self.addCleanup(shutil.rmtree, root, True)
        where = copy_as_collection(root)
        python = "{}.{}".format(*sys.version_info[:2])
        skips = [arg for test in SKIPPED for arg in ("--skip-test", test)]
        proc = _ansible.run(
            ["ansible-test", "sanity", "--local", "--python", python,
             "--color", "no", *skips], cwd=where, timeout=1800)
        output = proc.stdout + proc.stderr
        self.assertEqual(0, proc.returncode, output[-8000:])
        self.assertIn('Running sanity test "validate-modules"', output)
        self.assertIn('Running sanity test "pylint"', output)
        self.assertNotIn("ERROR:", output)
