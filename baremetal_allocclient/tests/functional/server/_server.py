"""Start and stop real ``baremetal-alloc-server`` processes for tests."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import requests

SERVER = os.path.join(
    os.path.dirname(sys.executable), "baremetal-alloc-server"
)


def free_port() -> int:
    """A currently free loopback TCP port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_cli(
    *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run the server command line to completion."""
    return subprocess.run(
        [SERVER, *args], capture_output=True, text=True, timeout=timeout,
        check=False,
    )


class ServerProcess:
    """One server process on a temporary SQLite file (or a given one)."""

    def __init__(self, db_url: str | None = None) -> None:
        self.tmpdir = tempfile.mkdtemp(prefix="bm-alloc-server-")
        self.db_url = db_url or "sqlite:///" + os.path.join(
            self.tmpdir, "server.sqlite"
        )
        self.port = 0
        self.proc: subprocess.Popen[str] | None = None
        self.log_path = os.path.join(self.tmpdir, "server.log")

    @property
    def endpoint(self) -> str:
        """Base URL of the running server."""
        return f"http://127.0.0.1:{self.port}"

    def upgrade(self) -> None:
        """Create the schema."""
        result = run_cli("db", "upgrade", "--db", self.db_url)
        if result.returncode != 0:
            raise RuntimeError(f"db upgrade failed: {result.stderr}")

    def start(self, *extra: str, timeout: float = 30) -> None:
        """Start ``serve`` and wait until it answers ``GET /``."""
        self.port = free_port()
        log = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [SERVER, "serve", "--host", "127.0.0.1", "--port",
             str(self.port), "--db", self.db_url, *extra],
            stdout=log, stderr=subprocess.STDOUT, text=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.log()}")
            try:
                requests.get(self.endpoint + "/", timeout=1)
                return
            except requests.ConnectionError:
                time.sleep(0.1)
        raise RuntimeError(f"server did not start: {self.log()}")

    def stop(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)

    def cleanup(self) -> None:
        """Stop and remove the temporary directory."""
        self.stop()
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def log(self) -> str:
        """The server's output so far."""
        try:
            with open(self.log_path, encoding="utf-8") as stream:
                return stream.read()
        except OSError:
            return ""

    def request(
        self, method: str, path: str, json: Any = None,
        version: str = "latest", **kwargs: Any,
    ) -> requests.Response:
        """One HTTP request at the given API version."""
        headers = {"X-OpenStack-Ironic-API-Version": version}
        headers.update(kwargs.pop("headers", {}))
        return requests.request(
            method, self.endpoint + path, json=json, headers=headers,
            timeout=30, **kwargs,
        )

    def wait_allocation(self, ident: str, timeout: float = 30) -> Any:
        """Poll until the allocation left ``allocating``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            resp = self.request("GET", f"/v1/allocations/{ident}")
            if resp.status_code == 503:  # transient by contract: retry
                time.sleep(0.2)
                continue
            if resp.status_code != 200:
                raise AssertionError(
                    f"GET allocation {ident}: {resp.status_code} {resp.text}"
                )
            body = resp.json()
            if body["state"] != "allocating":
                return body
            time.sleep(0.05)
        raise AssertionError(f"allocation {ident} still allocating")

    def wait_node(
        self, ident: str, provision_state: str, timeout: float = 30
    ) -> Any:
        """Poll until the node reached a provision state, no target left."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            node = self.request("GET", f"/v1/nodes/{ident}").json()
            if (
                node["provision_state"] == provision_state
                and node["target_provision_state"] is None
                and node["target_power_state"] is None
            ):
                return node
            time.sleep(0.05)
        raise AssertionError(f"node {ident} did not reach {provision_state}")

    def make_nodes(
        self, count: int, resource_class: str,
        traits: Sequence[str] = (), **fields: Any,
    ) -> list[Any]:
        """Nodes through the API: create, manage, provide, power off."""
        nodes = []
        for _ in range(count):
            body = {"driver": "fake-hardware",
                    "resource_class": resource_class, **fields}
            resp = self.request("POST", "/v1/nodes", body)
            assert resp.status_code == 201, resp.text
            uuid = resp.json()["uuid"]
            if traits:
                resp = self.request("PUT", f"/v1/nodes/{uuid}/traits",
                                    {"traits": list(traits)})
                assert resp.status_code == 204, resp.text
            for verb, state in (("manage", "manageable"),
                                ("provide", "available")):
                resp = self.request(
                    "PUT", f"/v1/nodes/{uuid}/states/provision",
                    {"target": verb},
                )
                assert resp.status_code == 202, resp.text
                self.wait_node(uuid, state)
            resp = self.request("PUT", f"/v1/nodes/{uuid}/states/power",
                                {"target": "power off"})
            assert resp.status_code == 202, resp.text
            nodes.append(self.wait_node(uuid, "available"))
        return nodes
