"""A real Keystone for the functional tests.

``keystone`` and ``gunicorn`` from PyPI are installed once into their own
virtualenv (default ``<repo>/.venv-keystone``, overridden by
``BAREMETAL_ALLOC_KEYSTONE_VENV``) under a file lock, marked complete only
at the end.  Each :class:`Keystone` bootstraps a fresh SQLite database
(``db_sync``, ``fernet_setup``, ``credential_setup``, ``bootstrap``) and
serves it with gunicorn (one worker) on a free loopback port.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence

from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.tests.functional.targets import (
    _die_with_parent,
    _Process,
    free_port,
)

VENV_ENV = "BAREMETAL_ALLOC_KEYSTONE_VENV"
REQUIREMENTS = ("keystone", "gunicorn")
REGION = "RegionOne"
_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
_START_TIMEOUT = 120.0

# Runs inside the Keystone virtualenv.  Keystone's oslo.config parses the
# command line, so gunicorn is configured here rather than by arguments.
_RUNNER = r"""
import sys
from gunicorn.app.base import BaseApplication
port = sys.argv[1]
sys.argv = sys.argv[:1]

class Keystone(BaseApplication):
    def load_config(self):
        self.cfg.set("bind", "127.0.0.1:" + port)
        self.cfg.set("workers", 1)
        self.cfg.set("threads", 4)
        self.cfg.set("control_socket_disable", True)

    def load(self):
        from keystone.wsgi.api import application
        return application

Keystone().run()
"""


def venv_path() -> str:
    """Where the Keystone virtualenv lives."""
    return os.path.abspath(os.environ.get(
        VENV_ENV, os.path.join(_REPO_ROOT, ".venv-keystone")))


def ensure_venv() -> str:
    """Install Keystone once (file-locked); return the venv's bin dir."""
    return targets.ensure_venv(venv_path(), REQUIREMENTS, "Keystone")


def _config(workdir: str) -> str:
    return (
        "[DEFAULT]\nuse_stderr = true\n"
        f"[database]\nconnection = sqlite:///{workdir}/keystone.sqlite\n"
        f"[fernet_tokens]\nkey_repository = {workdir}/fernet-keys\n"
        f"[fernet_receipts]\nkey_repository = {workdir}/fernet-keys\n"
        f"[credential]\nkey_repository = {workdir}/credential-keys\n"
    )


class Keystone:
    """One bootstrapped Keystone process on a loopback port."""

    def __init__(self, admin_password: str) -> None:
        self.bin_dir = ensure_venv()
        self.workdir = tempfile.mkdtemp(prefix="baremetal-alloc-keystone-")
        self.conf = os.path.join(self.workdir, "keystone.conf")
        with open(self.conf, "w") as handle:
            handle.write(_config(self.workdir))
        self._env = {
            k: v for k, v in os.environ.items() if not k.startswith("OS_")
        }
        self._env["OS_KEYSTONE_CONFIG_FILES"] = self.conf
        self._process: _Process | None = None
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v3"
        try:
            self._bootstrap(admin_password)
            self._start()
        except BaseException:
            self.close()
            raise

    def _manage(self, *args: str, what: str) -> None:
        targets.run_setup(
            [os.path.join(self.bin_dir, "keystone-manage"),
             "--config-file", self.conf, *args], 600, what, self._env)

    def _bootstrap(self, admin_password: str) -> None:
        owner = ["--keystone-user", str(os.getuid()),
                 "--keystone-group", str(os.getgid())]
        self._manage("db_sync", what="keystone-manage db_sync")
        self._manage("fernet_setup", *owner, what="fernet_setup")
        self._manage("credential_setup", *owner, what="credential_setup")
        self._manage(
            "bootstrap", "--bootstrap-password", admin_password,
            "--bootstrap-admin-url", self.url,
            "--bootstrap-public-url", self.url,
            "--bootstrap-internal-url", self.url,
            "--bootstrap-region-id", REGION, what="keystone bootstrap")

    def _start(self) -> None:
        argv = [os.path.join(self.bin_dir, "python"), "-c", _RUNNER,
                str(self.port)]
        self._process = _EnvProcess(argv, self.workdir, self._env)
        self._process.wait_ready(self.url, _START_TIMEOUT)

    def log_tail(self) -> str:
        """The end of Keystone's log."""
        return self._process.log_tail() if self._process else ""

    def close(self) -> None:
        """Stop the process and remove everything."""
        if self._process is not None:
            self._process.stop(keep_workdir=True)
            self._process = None
        shutil.rmtree(self.workdir, ignore_errors=True)


class _EnvProcess(_Process):
    """A process with Keystone's environment (``_Process`` drops ``OS_*``
    variables; Keystone needs OS_KEYSTONE_CONFIG_FILES)."""

    def __init__(self, argv: Sequence[str], workdir: str,
                 env: dict[str, str]) -> None:
        self.workdir = workdir
        self.log_path = os.path.join(workdir, "keystone.log")
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop
        self.popen = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=self._log,
            stderr=subprocess.STDOUT, cwd=workdir, env=env,
            preexec_fn=_die_with_parent,
        )
