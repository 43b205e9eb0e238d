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
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import bcrypt
import yaml

from baremetal_allocclient.tests.fixtures import preforked
from baremetal_allocclient.tests.fixtures.launcher import (
    ServerProcess,
    run_cli,
)

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
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    clean.update(env or {})
    return preforked.run([os.path.join(BIN_DIR, name), *args], env=clean,
                         timeout=timeout)
