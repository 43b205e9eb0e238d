"""Servers with authentication and TLS for the security tests.

Credentials are random per run (so a leak into a log is unambiguous), bcrypt
hashes use the lowest cost to keep start-up fast, and the test CA and
server certificate are generated with ``cryptography``.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import bcrypt
import requests
import yaml

from baremetal_allocclient.tests.functional.server._server import free_port

BIN_DIR = os.path.dirname(sys.executable)
SERVER = os.path.join(BIN_DIR, "baremetal-alloc-server")
ADMIN, ALICE, BOB, CAROL = "admin", "alice", "bob", "carol"
PROJECT_A, PROJECT_B = "proj-a", "proj-b"


@dataclass(frozen=True)
class Credentials:
    """Files for ``--htpasswd``/``--auth-projects`` and the passwords."""

    htpasswd: str
    projects: str
    passwords: dict[str, str]

    def auth(self, user: str) -> tuple[str, str]:
        """A ``requests`` auth tuple."""
        return user, self.passwords[user]


def write_credentials(directory: str, project_a: str = PROJECT_A,
                      project_b: str = PROJECT_B) -> Credentials:
    """admin (admin), alice (``project_a``), bob (``project_b``), carol
    (no role)."""
    passwords = {
        user: f"pw-{user}-{secrets.token_hex(8)}"
        for user in (ADMIN, ALICE, BOB, CAROL)
    }
    lines = []
    for user, password in passwords.items():
        digest = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4))
        if user == BOB:  # Apache's htpasswd -B writes the $2y$ prefix
            digest = b"$2y$" + digest[4:]
        lines.append(f"{user}:{digest.decode()}")
    htpasswd = os.path.join(directory, "htpasswd")
    with open(htpasswd, "w", encoding="utf-8") as stream:
        stream.write("# test users\n" + "\n".join(lines) + "\n")
    projects = os.path.join(directory, "projects.yaml")
    with open(projects, "w", encoding="utf-8") as stream:
        yaml.safe_dump({"users": {
            ADMIN: {"roles": ["admin"]},
            ALICE: {"project": project_a, "roles": ["member"]},
            BOB: {"project": project_b, "roles": ["member"]},
        }}, stream)
    return Credentials(htpasswd, projects, passwords)


@dataclass(frozen=True)
class TlsFiles:
    """A test CA and a server certificate for 127.0.0.1/localhost."""

    ca: str
    cert: str
    key: str


def write_tls(directory: str) -> TlsFiles:
    """Generate a CA and a server certificate signed by it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), True)
        .add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False,
            key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(
            ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([
            x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        ]), False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None),
                       True)
        .add_extension(x509.ExtendedKeyUsage(
            [ExtendedKeyUsageOID.SERVER_AUTH]), False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
            ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    files = TlsFiles(*(os.path.join(directory, name)
                       for name in ("ca.pem", "server.pem", "server.key")))
    pem = serialization.Encoding.PEM
    with open(files.ca, "wb") as stream:
        stream.write(ca.public_bytes(pem))
    with open(files.cert, "wb") as stream:
        stream.write(cert.public_bytes(pem))
    with open(files.key, "wb") as stream:
        stream.write(key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
    return files


class SecureServer:
    """One server process started with extra options, on a temporary
    SQLite database unless given another database's URL."""

    def __init__(self, db_url: str | None = None) -> None:
        self.tmpdir = tempfile.mkdtemp(prefix="bm-alloc-security-")
        self.db_url = db_url or "sqlite:///" + os.path.join(
            self.tmpdir, "db.sqlite")
        self.log_path = os.path.join(self.tmpdir, "server.log")
        self.port = 0
        self.scheme = "http"
        self.verify: bool | str = True
        self.admin_auth: tuple[str, str] | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        """Base URL of the running server."""
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run the server command line to completion."""
        return subprocess.run([SERVER, *args], capture_output=True,
                              text=True, timeout=60, check=False)

    def start(
        self, *extra: str, tls: TlsFiles | None = None,
        admin_auth: tuple[str, str] | None = None,
        inventory: str | None = None, env: dict[str, str] | None = None,
        port: int | None = None,
    ) -> None:
        """``db upgrade`` (+ ``enroll``), ``serve``, wait for ``GET /``.

        ``env`` adds variables to the server's environment; ``port`` is
        chosen when not given.
        """
        for argv in (("db", "upgrade", "--db", self.db_url),
                     *((("enroll", "--db", self.db_url, inventory),)
                       if inventory else ())):
            result = self.run(*argv)
            if result.returncode != 0:
                raise RuntimeError(f"{argv}: {result.stderr}")
        self.port = port or free_port()
        args = ["serve", "--host", "127.0.0.1", "--port", str(self.port),
                "--db", self.db_url, *extra]
        if tls is not None:
            self.scheme, self.verify = "https", tls.ca
            args += ["--tls-cert", tls.cert, "--tls-key", tls.key]
        self.admin_auth = admin_auth
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [SERVER, *args], stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})})
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.log()}")
            try:
                requests.get(self.endpoint + "/", timeout=1,
                             verify=self.verify)
                return
            except requests.ConnectionError:
                time.sleep(0.1)
        raise RuntimeError(f"server did not start: {self.log()}")

    def cleanup(self) -> None:
        """Stop the process and remove the temporary directory."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def log(self) -> str:
        """Everything the server wrote so far."""
        try:
            with open(self.log_path, encoding="utf-8",
                      errors="replace") as stream:
                return stream.read()
        except OSError:
            return ""

    def request(
        self, method: str, path: str, json: Any = None, *,
        auth: tuple[str, str] | bool | None = None,
        version: str = "latest", **kwargs: Any,
    ) -> requests.Response:
        """One request: as the admin by default, anonymous with
        ``auth=False``, else as the given user."""
        headers = {"X-OpenStack-Ironic-API-Version": version}
        headers.update(kwargs.pop("headers", {}))
        return requests.request(
            method, self.endpoint + path, json=json, headers=headers,
            auth=self.admin_auth if auth is None else (
                auth if isinstance(auth, tuple) else None),
            verify=self.verify, timeout=30,
            **kwargs,
        )

    def expect(self, status: int, method: str, path: str, json: Any = None,
               **kwargs: Any) -> Any:
        """A request that must answer ``status``; its JSON body or None."""
        response = self.request(method, path, json, **kwargs)
        if response.status_code != status:
            raise AssertionError(
                f"{method} {path} -> {response.status_code}, expected "
                f"{status}: {response.text[:1000]}")
        return response.json() if response.content else None

    def wait_node(self, uuid: str, state: str) -> Any:
        """Poll (as admin) until the node settled in ``state``."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            node = self.expect(200, "GET", f"/v1/nodes/{uuid}")
            if (node["provision_state"] == state
                    and node["target_provision_state"] is None
                    and node["target_power_state"] is None):
                return node
            time.sleep(0.05)
        raise AssertionError(f"node {uuid} did not reach {state}")

    def wait_allocation(self, uuid: str,
                        auth: tuple[str, str] | None = None) -> Any:
        """Poll until the allocation left ``allocating``."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            body = self.expect(200, "GET", f"/v1/allocations/{uuid}",
                               auth=auth)
            if body["state"] != "allocating":
                return body
            time.sleep(0.05)
        raise AssertionError(f"allocation {uuid} still allocating")

    def make_nodes(self, count: int, resource_class: str,
                   **fields: Any) -> list[Any]:
        """Available, powered-off nodes, created through the API as admin."""
        nodes = []
        for _ in range(count):
            node = self.expect(201, "POST", "/v1/nodes", {
                "driver": "fake-hardware", "resource_class": resource_class,
                **fields})
            for verb, state in (("manage", "manageable"),
                                ("provide", "available")):
                self.expect(202, "PUT",
                            f"/v1/nodes/{node['uuid']}/states/provision",
                            {"target": verb})
                self.wait_node(node["uuid"], state)
            self.expect(202, "PUT", f"/v1/nodes/{node['uuid']}/states/power",
                        {"target": "power off"})
            nodes.append(self.wait_node(node["uuid"], "available"))
        return nodes


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
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    clean.update(env or {})
    return subprocess.run([os.path.join(BIN_DIR, name), *args],
                          capture_output=True, text=True, timeout=timeout,
                          env=clean, check=False)
