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

from baremetal_allocclient.tests.fixtures.peers import (
    Peer,
    ensure_venv,
    run_setup,
    venv_path,
)
from baremetal_allocclient.tests.fixtures.processes import free_port

VENV_ENV = "BAREMETAL_ALLOC_KEYSTONE_VENV"
REQUIREMENTS = ("keystone", "gunicorn")
REGION = "RegionOne"

# Runs inside the Keystone virtualenv.  Keystone's oslo.config parses the
# command line, so gunicorn is configured here rather than by arguments.
_RUNNER = r"""
import sys
from gunicorn.app.base import BaseApplication
port, threads = sys.argv[1], int(sys.argv[2])
sys.argv = sys.argv[:1]

class Keystone(BaseApplication):
    def load_config(self):
        self.cfg.set("bind", "127.0.0.1:" + port)
        self.cfg.set("workers", 1)
        self.cfg.set("threads", threads)
        self.cfg.set("control_socket_disable", True)

    def load(self):
        from keystone.wsgi.api import application
        return application

Keystone().run()
"""


def ensure_keystone_venv() -> str:
    """Install Keystone once (file-locked); return the venv's bin dir."""
    return ensure_venv(venv_path(VENV_ENV, ".venv-keystone"), REQUIREMENTS,
                       "Keystone")


def _config(workdir: str, token_expiration: int | None = None,
            hash_rounds: int | None = None) -> str:
    token = ("" if token_expiration is None else
             f"[token]\nexpiration = {token_expiration}\n")
    if hash_rounds is not None:
        token += f"[identity]\npassword_hash_rounds = {hash_rounds}\n"
    return (
        "[DEFAULT]\nuse_stderr = true\n"
        # SQLite's busy wait 30 s, not pysqlite's 5 s: concurrent writes
        # (tempest's workers deleting their users) otherwise get a 500
        # "database is locked" on a loaded machine.
        f"[database]\nconnection = sqlite:///{workdir}/keystone.sqlite"
        "?timeout=30\n"
        f"[fernet_tokens]\nkey_repository = {workdir}/fernet-keys\n"
        f"[fernet_receipts]\nkey_repository = {workdir}/fernet-keys\n"
        f"[credential]\nkey_repository = {workdir}/credential-keys\n"
        + token
    )


class _KeystoneProcess(Peer):
    """A Keystone process serving the configuration ``conf``."""

    name = "keystone"
    ready_path = "/v3"
    start_timeout = 120.0
    #: Request threads of the one gunicorn worker.
    threads = 4

    def __init__(self, bin_dir: str, workdir: str | None = None) -> None:
        self.bin_dir = bin_dir
        super().__init__(workdir)
        self.conf = os.path.join(self.workdir, "keystone.conf")

    @property
    def url(self) -> str:
        """The identity API (what clients call ``auth_url``)."""
        return self.endpoint + "/v3"

    def environment(self) -> dict[str, str]:
        return {"OS_KEYSTONE_CONFIG_FILES": self.conf}

    def command(self, port: int) -> list[str]:
        return [os.path.join(self.bin_dir, "python"), "-c", _RUNNER,
                str(port), str(self.threads)]


class Keystone(_KeystoneProcess):
    """One bootstrapped Keystone process on a loopback port (a port that
    does not move: bootstrap writes its URL into the catalog)."""

    movable = False

    def __init__(self, admin_password: str,
                 hash_rounds: int | None = None, threads: int = 4) -> None:
        """``hash_rounds``: bcrypt's cost for passwords (Keystone's
        default, 12, when None); 4, its least, makes every password
        check of a test that creates many users cheap.  ``threads``: 1
        serialises the requests (SQLite refuses at once, with a 500, a
        write that two requests start together)."""
        self.threads = threads
        super().__init__(ensure_keystone_venv())
        with open(self.conf, "w") as handle:
            handle.write(_config(self.workdir, hash_rounds=hash_rounds))
        self.port = free_port()
        try:
            self._bootstrap(admin_password)
            self.start()
        except BaseException:
            self.close()
            raise

    def _manage(self, *args: str, what: str) -> None:
        run_setup([os.path.join(self.bin_dir, "keystone-manage"),
                   "--config-file", self.conf, *args], 600, what,
                  self.environment())

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

    def issuer(self, token_expiration: int) -> Issuer:
        """A second process on this database and these keys whose tokens
        expire after ``token_expiration`` seconds; ``close`` stops it."""
        return Issuer(self, token_expiration)


class Issuer(_KeystoneProcess):
    """A Keystone process sharing another's database and keys, with its
    own ``[token] expiration``: its tokens are valid everywhere in that
    Keystone until they expire."""

    def __init__(self, keystone: Keystone, token_expiration: int) -> None:
        super().__init__(keystone.bin_dir, keystone.workdir)
        self.conf = os.path.join(self.workdir,
                                 f"keystone-{token_expiration}s.conf")
        with open(self.conf, "w") as handle:
            handle.write(_config(self.workdir, token_expiration))
        try:
            self.start()
        except BaseException:
            self.close()
            raise

    @property
    def log_path(self) -> str:
        return self.conf[:-len(".conf")] + ".log"

    def close(self) -> None:
        """Stop the process (its files stay with the first process's)."""
        self.stop()
