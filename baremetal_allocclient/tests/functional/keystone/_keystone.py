"""A real Keystone for the functional tests.

``keystone`` and ``gunicorn`` from PyPI are installed once into their own
virtualenv (default ``<repo>/.venv-keystone``, overridden by
``BAREMETAL_ALLOC_KEYSTONE_VENV``) under a file lock, marked complete only
at the end.  Each :class:`Keystone` bootstraps a fresh SQLite database
(``db_sync``, ``fernet_setup``, ``credential_setup``, ``bootstrap``) and
serves it with gunicorn (one worker) on a free loopback port.
:meth:`Keystone.issuer` starts a second Keystone process on the same
database and keys (as the nodes of a Keystone cluster share them) whose
tokens expire after a few seconds: tokens that have really expired, while
the first process keeps Keystone's default lifetime for everything else.
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


def _config(workdir: str, token_expiration: int | None = None) -> str:
    token = ("" if token_expiration is None else
             f"[token]\nexpiration = {token_expiration}\n")
    return (
        "[DEFAULT]\nuse_stderr = true\n"
        f"[database]\nconnection = sqlite:///{workdir}/keystone.sqlite\n"
        f"[fernet_tokens]\nkey_repository = {workdir}/fernet-keys\n"
        f"[fernet_receipts]\nkey_repository = {workdir}/fernet-keys\n"
        f"[credential]\nkey_repository = {workdir}/credential-keys\n"
        + token
    )


def _environment(conf: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env["OS_KEYSTONE_CONFIG_FILES"] = conf
    return env


class Keystone:
    """One bootstrapped Keystone process on a loopback port."""

    def __init__(self, admin_password: str) -> None:
        self.bin_dir = ensure_venv()
        self.workdir = tempfile.mkdtemp(prefix="baremetal-alloc-keystone-")
        self.conf = os.path.join(self.workdir, "keystone.conf")
        with open(self.conf, "w") as handle:
            handle.write(_config(self.workdir))
        self._env = _environment(self.conf)
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
        self._process = _serve(self.bin_dir, self.workdir, self.port,
                               self._env, "keystone.log")
        self._process.wait_ready(self.url, _START_TIMEOUT)

    def issuer(self, token_expiration: int) -> Issuer:
        """A second process on this database and these keys whose tokens
        expire after ``token_expiration`` seconds; ``close`` stops it."""
        return Issuer(self, token_expiration)

    def log_tail(self) -> str:
        """The end of Keystone's log."""
        return self._process.log_tail() if self._process else ""

    def close(self) -> None:
        """Stop the process and remove everything."""
        if self._process is not None:
            self._process.stop(keep_workdir=True)
            self._process = None
        shutil.rmtree(self.workdir, ignore_errors=True)


class Issuer:
    """A Keystone process sharing another's database and keys, with its
    own ``[token] expiration``: its tokens are valid everywhere in that
    Keystone until they expire."""

    def __init__(self, keystone: Keystone, token_expiration: int) -> None:
        conf = os.path.join(keystone.workdir,
                            f"keystone-{token_expiration}s.conf")
        with open(conf, "w") as handle:
            handle.write(_config(keystone.workdir, token_expiration))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v3"
        self._process: _Process | None = _serve(
            keystone.bin_dir, keystone.workdir, self.port,
            _environment(conf), f"keystone-{self.port}.log")
        try:
            self._process.wait_ready(self.url, _START_TIMEOUT)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop the process (its log stays with the first process's)."""
        if self._process is not None:
            self._process.stop(keep_workdir=True)
            self._process = None


def _serve(bin_dir: str, workdir: str, port: int, env: dict[str, str],
           log_name: str) -> _Process:
    argv = [os.path.join(bin_dir, "python"), "-c", _RUNNER, str(port)]
    return _EnvProcess(argv, workdir, env, log_name)


class _EnvProcess(_Process):
    """A process with Keystone's environment (``_Process`` drops ``OS_*``
    variables; Keystone needs OS_KEYSTONE_CONFIG_FILES)."""

    def __init__(self, argv: Sequence[str], workdir: str,
                 env: dict[str, str], log_name: str) -> None:
        self.workdir = workdir
        self.log_path = os.path.join(workdir, log_name)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop
        self.popen = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=self._log,
            stderr=subprocess.STDOUT, cwd=workdir, env=env,
            preexec_fn=_die_with_parent,
        )
