"""A real OpenStack Placement for the functional tests, plus reference
servers using it.

``openstack-placement`` from PyPI is installed once into its own
virtualenv (default ``<repo>/.venv-placement``, overridden by
``BAREMETAL_ALLOC_PLACEMENT_VENV``) under a file lock, so two test worker
processes never install at the same time.  Placement runs with
``auth_strategy = noauth2``, SQLite and one single-threaded worker
(stdlib ``wsgiref`` around ``placement.wsgi.api``) on a free loopback
port; every request line is appended to a log file, so tests can assert
what was asked (e.g. ``in_tree``).  It is started once per test process
and can be stopped and started again on the same port and database.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.parse
from collections.abc import Sequence
from typing import Any

import requests

from baremetal_allocclient.tests.fixtures.launcher import ServerProcess
from baremetal_allocclient.tests.fixtures.peers import (
    Lazy,
    Peer,
    ensure_venv,
    run_setup,
    venv_path,
)
from baremetal_allocclient.tests.fixtures.processes import clean_env
from baremetal_allocclient.tests.functional.targets import (
    Target,
    ensure_ironic_venv,
)

VENV_ENV = "BAREMETAL_ALLOC_PLACEMENT_VENV"
REQUIREMENTS = ("openstack-placement",)
_START_TIMEOUT = 120.0
HEADERS = {"X-Auth-Token": "admin",
           "OpenStack-API-Version": "placement 1.31"}

# Runs inside the Placement virtualenv: one worker, request log to a file.
_RUNNER = r"""
import sys
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
port, request_log = int(sys.argv[1]), sys.argv[2]
from placement.wsgi.api import application

class Handler(WSGIRequestHandler):
    def log_request(self, code="-", size="-"):
        with open(request_log, "a", encoding="utf-8") as log:
            log.write("%s %s\n" % (self.requestline, code))

    def log_message(self, *args):
        pass

make_server("127.0.0.1", port, application, WSGIServer, Handler)\
    .serve_forever()
"""


def ensure_placement_venv() -> str:
    """Install Placement once (file-locked); return the venv's bin dir."""
    return ensure_venv(venv_path(VENV_ENV, ".venv-placement"),
                       REQUIREMENTS, "Placement")


class Placement(Peer):
    """One Placement process; ``stop()``/``start()`` keep port and data."""

    name = "placement"
    start_timeout = _START_TIMEOUT

    def __init__(self) -> None:
        self.bin_dir = ensure_placement_venv()
        super().__init__()
        self.request_log = os.path.join(self.workdir, "requests.log")
        conf = os.path.join(self.workdir, "placement.conf")
        with open(conf, "w") as handle:
            handle.write(
                "[DEFAULT]\nuse_stderr = true\n"
                "[api]\nauth_strategy = noauth2\n"
                "[placement_database]\n"
                f"connection = sqlite:///{self.workdir}/placement.sqlite\n"
            )
        try:
            run_setup(
                [os.path.join(self.bin_dir, "placement-manage"),
                 "--config-file", conf, "db", "sync"], 300,
                "creating the Placement schema", self.environment())
            self.start()
        except BaseException:
            self.close()
            raise

    def environment(self) -> dict[str, str]:
        return {"OS_PLACEMENT_CONFIG_DIR": self.workdir}

    def command(self, port: int) -> list[str]:
        return [os.path.join(self.bin_dir, "python"), "-c", _RUNNER,
                str(port), self.request_log]

    # -- reading Placement's state ----------------------------------------
    def get(self, path: str, **params: str) -> Any:
        """GET a Placement path as admin; the decoded body."""
        url = self.endpoint + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        response = requests.get(url, headers=HEADERS, timeout=10)
        response.raise_for_status()
        return response.json()

    def provider(self, uuid: str) -> dict[str, Any] | None:
        """Name, inventories, traits and usages of a provider, or None."""
        response = requests.get(
            f"{self.endpoint}/resource_providers/{uuid}", headers=HEADERS,
            timeout=10,
        )
        if response.status_code == 404:
            return None
        response.raise_for_status()
        try:
            return {
                "name": response.json()["name"],
                "inventories": self.get(
                    f"/resource_providers/{uuid}/inventories")["inventories"],
                "traits": set(self.get(
                    f"/resource_providers/{uuid}/traits")["traits"]),
                "usages": self.get(
                    f"/resource_providers/{uuid}/usages")["usages"],
            }
        except requests.HTTPError as exc:
            # Deleted between these reads (the sync runs meanwhile).
            if exc.response is not None and exc.response.status_code == 404:
                return None
            raise

    def consumer(self, uuid: str) -> dict[str, Any]:
        """The allocations of a consumer: provider uuid -> resources."""
        allocations: dict[str, Any] = self.get(f"/allocations/{uuid}")[
            "allocations"]
        return {rp: a["resources"] for rp, a in allocations.items()}

    def requests_made(self) -> list[str]:
        """Request lines received so far."""
        try:
            with open(self.request_log, encoding="utf-8") as log:
                return log.read().splitlines()
        except FileNotFoundError:
            return []


_PLACEMENT = Lazy(Placement, Placement.close)


def placement() -> Placement:
    """The test process's Placement (started on first use)."""
    return _PLACEMENT.get()


def start_server(
    db: str, placement_url: str | None, *extra: str,
    clouds_yaml: str | None = None,
) -> Target:
    """A reference server on ``db`` using Placement (or the database
    backend when ``placement_url`` is None); stopped by ``target.stop``.

    ``clouds_yaml`` is written to the server's working directory (where
    openstacksdk looks for it), for ``--placement-cloud``; the URL is then
    not passed (the cloud provides the endpoint).
    """
    server = ServerProcess(db)
    args: list[str] = ["--step-delay", "0.05",
                       "--conductor-name", os.path.basename(server.tmpdir)]
    if clouds_yaml is not None:
        with open(os.path.join(server.tmpdir, "clouds.yaml"), "w") as handle:
            handle.write(clouds_yaml)
        args += ["--backend", "placement"]
    elif placement_url:
        args += ["--backend", "placement", "--placement-url", placement_url]
    if placement_url or clouds_yaml is not None:
        args += ["--placement-sync-interval", "0.3",
                 "--placement-reconcile-interval", "5",
                 "--placement-wait", "2"]
    try:
        server.start(*args, *extra, timeout=_START_TIMEOUT, cwd=server.tmpdir)
    except BaseException:
        server.cleanup()
        raise
    return Target("reference", server.endpoint, ensure_ironic_venv,
                  server=server)


def run_cli(argv: Sequence[str]) -> Any:
    """Run a CLI command with a clean environment; its JSON output."""
    result = subprocess.run(
        list(argv), capture_output=True, text=True, timeout=120,
        env=clean_env(), check=False,
    )
    if result.returncode != 0:
        raise AssertionError(
            f"{argv!r} exited {result.returncode}:\n{result.stderr[-3000:]}"
        )
    return json.loads(result.stdout)


def wait_for(check: Any, timeout: float = 30.0, what: str = "") -> Any:
    """Poll ``check()`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what or check}: {last!r}")
