"""Helpers of the security tests: a server process that creates its
schema, a leak check and console scripts run in a clean environment.

The test users, their passwords and the TLS files are
:mod:`baremetal_allocclient.tests.fixtures.credentials`'s (named here
too, as the tests have always called them).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from baremetal_allocclient.tests.fixtures import preforked
from baremetal_allocclient.tests.fixtures.credentials import (
    ADMIN,
    ALICE,
    BOB,
    CAROL,
    PROJECT_A,
    PROJECT_B,
    Credentials,
    TlsFiles,
    write_credentials,
    write_tls,
)
from baremetal_allocclient.tests.fixtures.launcher import (
    ServerProcess,
    run_cli,
)
from baremetal_allocclient.tests.fixtures.processes import clean_env

#: Named here too, as the security tests have always called them.
__all__ = [
    "ADMIN",
    "ALICE",
    "BOB",
    "CAROL",
    "PROJECT_A",
    "PROJECT_B",
    "Credentials",
    "SecureServer",
    "TlsFiles",
    "command",
    "secrets_in",
    "write_credentials",
    "write_tls",
]
BIN_DIR = os.path.dirname(sys.executable)


class SecureServer(ServerProcess):
    """A server process whose :meth:`start` creates the schema first (on
    a temporary SQLite database unless given another database's URL)."""

    def start(self, *extra: str, **options: Any) -> None:
        """``db upgrade`` (+ ``enroll``), ``serve``, wait for ``GET /``
        (the options of :meth:`ServerProcess.start`)."""
        super().start(*extra, schema=True, **options)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run the server command line to completion."""
        return run_cli(*args)


def secrets_in(text: str, credentials: Credentials) -> list[str]:
    """The passwords (and their basic-auth tokens) found in ``text``."""
    import base64

    found = []
    for user, password in credentials.passwords.items():
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        for secret in (password, token):
            if secret in text:
                found.append(secret)
    return found


def command(name: str, args: Sequence[str], env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run a console script next to this interpreter (clean OS_* env)."""
    return preforked.run([os.path.join(BIN_DIR, name), *args],
                         env=clean_env(env), timeout=timeout)
