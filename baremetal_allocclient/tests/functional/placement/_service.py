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

import atexit
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Sequence
from typing import Any

import requests

from baremetal_allocclient.tests.fixtures.launcher import (
    ServerProcess,
    upgrade,
)
from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.tests.functional.targets import (
    Target,
    TargetError,
    _Process,
    ensure_ironic_venv,
    free_port,
)

VENV_ENV = "BAREMETAL_ALLOC_PLACEMENT_VENV"
REQUIREMENTS = ("openstack-placement",)
_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
_MARKER = ".baremetal-alloc-ready"
_INSTALL_TIMEOUT = 1800.0
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


def venv_path() -> str:
    """Where the Placement virtualenv lives."""
    return os.path.abspath(os.environ.get(
        VENV_ENV, os.path.join(_REPO_ROOT, ".venv-placement")))


def ensure_venv() -> str:
    """Install Placement once (file-locked); return the venv's bin dir."""
    return targets.ensure_venv(venv_path(), REQUIREMENTS, "Placement")


class _EnvProcess(_Process):
    """A process with Placement's environment (``_Process`` drops all
    ``OS_*`` variables, Placement needs OS_PLACEMENT_CONFIG_DIR)."""

    def __init__(self, argv: Sequence[str], workdir: str,
                 env: dict[str, str]) -> None:
        self.workdir = workdir
        self.log_path = os.path.join(workdir, "placement.log")
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop
        self.popen = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=self._log,
            stderr=subprocess.STDOUT, cwd=workdir, env=env,
        )


class Placement:
    """One Placement process; ``stop()``/``start()`` keep port and data."""

    def __init__(self) -> None:
        self.bin_dir = ensure_venv()
        self.workdir = tempfile.mkdtemp(prefix="baremetal-alloc-placement-")
        self.request_log = os.path.join(self.workdir, "requests.log")
        self._env = {
            k: v for k, v in os.environ.items() if not k.startswith("OS_")
        }
        self._env["OS_PLACEMENT_CONFIG_DIR"] = self.workdir
        with open(os.path.join(self.workdir, "placement.conf"), "w") as conf:
            conf.write(
                "[DEFAULT]\nuse_stderr = true\n"
                "[api]\nauth_strategy = noauth2\n"
                "[placement_database]\n"
                f"connection = sqlite:///{self.workdir}/placement.sqlite\n"
            )
        self._process: _Process | None = None
        self.port = 0
        self.endpoint = ""
        try:
            conf = os.path.join(self.workdir, "placement.conf")
            targets.run_setup(
                [os.path.join(self.bin_dir, "placement-manage"),
                 "--config-file", conf, "db", "sync"], 300,
                "creating the Placement schema", self._env)
            self.start()
        except BaseException:
            self.stop()
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise

    def start(self) -> None:
        """Start (again) on the same port; wait until it answers."""
        for attempt in range(3):
            if not self.port:
                self.port = free_port()
            self.endpoint = f"http://127.0.0.1:{self.port}"
            argv = [os.path.join(self.bin_dir, "python"), "-c", _RUNNER,
                    str(self.port), self.request_log]
            self._process = _EnvProcess(argv, self.workdir, self._env)
            try:
                self._process.wait_ready(self.endpoint + "/", _START_TIMEOUT)
                return
            except TargetError:
                self.stop()
                with open(os.path.join(self.workdir, "placement.log")) as log:
                    taken = "Address already in use" in log.read()
                if attempt == 2 or not taken:
                    raise
                self.port = 0

    def stop(self) -> None:
        """Stop the process (data and port are kept for ``start``)."""
        if self._process is not None:
            self._process.stop(keep_workdir=True)
            self._process = None

    def close(self) -> None:
        """Stop and remove everything."""
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

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


_lock = threading.Lock()
_placement: Placement | None = None


def placement() -> Placement:
    """The test process's Placement (started on first use)."""
    global _placement
    with _lock:
        if _placement is None:
            _placement = Placement()
            atexit.register(_placement.close)
        return _placement


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


def upgrade_db(db: str) -> None:
    """Create the reference schema."""
    upgrade(db)


def run_cli(argv: Sequence[str]) -> Any:
    """Run a CLI command with a clean environment; its JSON output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    result = subprocess.run(
        list(argv), capture_output=True, text=True, timeout=120, env=env,
        check=False,
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
