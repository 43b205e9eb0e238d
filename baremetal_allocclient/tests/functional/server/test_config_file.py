"""``serve`` configured as operators expect, with real processes: a config
file, environment overrides, the command line over both, secrets from a
file (never in ``ps``), and a one-line message for a bad configuration."""

from __future__ import annotations

import http.server
import os
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
import unittest
import uuid
from typing import Any

import requests
import testtools
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

from baremetal_allocclient.tests.fixtures import preforked
from baremetal_allocclient.tests.fixtures.launcher import SERVER
from baremetal_allocclient.tests.fixtures.processes import (
    Process,
    clean_env,
    free_port,
)

MYSQL_ENV = "BAREMETAL_ALLOC_TEST_MYSQL_URL"


def _wait_answers(server: Process, port: int) -> None:
    """Until ``serve`` answers on ``port`` (any status)."""
    server.wait_ready(f"http://127.0.0.1:{port}/", 60, status=None)


def _cmdline(server: Process) -> bytes:
    with open(f"/proc/{server.pid}/cmdline", "rb") as stream:
        return stream.read()


class _Base(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="bm-alloc-conf-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.env = clean_env()
        self.db = "sqlite:///" + os.path.join(self.tmp, "db.sqlite")

    def write(self, name: str, text: str) -> str:
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.chmod(path, 0o600)
        return path

    def run_server(
        self, *argv: str, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return preforked.run([SERVER, *argv], env={**self.env, **env},
                             timeout=120)

    def serve(self, *argv: str, **env: str) -> Process:
        server = Process([SERVER, "serve", *argv], os.path.join(
            self.tmp, "serve.log"), env={**self.env, **env})
        self.addCleanup(server.stop)
        return server


class PrecedenceTests(_Base):

    def test_file_then_environment_then_command_line(self) -> None:
        ports = [free_port(), free_port(), free_port()]
        conf = self.write("server.conf", (
            f"[api]\nport = {ports[0]}\n"
            f"[database]\nconnection = {self.db}\n"
            f"[conductor]\nname = from-file\nworkers = 2\n"))
        upgrade = self.run_server("db", "upgrade", "--config-file", conf)
        self.assertEqual(0, upgrade.returncode, upgrade.stderr)
        runs: list[tuple[list[str], dict[str, str], int]] = [
            ([], {}, ports[0]),
            ([], {"OS_API__PORT": str(ports[1])}, ports[1]),
            (["--port", str(ports[2])], {"OS_API__PORT": str(ports[1])},
             ports[2]),
        ]
        for argv, env, port in runs:
            server = self.serve("--config-file", conf, *argv, **env)
            _wait_answers(server, port)
            server.stop()
            self.assertIn(f"127.0.0.1:{port}", server.log())


class _TokenRecorder(http.server.BaseHTTPRequestHandler):
    tokens: list[str] = []

    def do_GET(self) -> None:
        type(self).tokens.append(self.headers.get("X-Auth-Token", ""))
        body = (b'{"versions": [{"id": "v1.0", "max_version": "1.39", '
                b'"min_version": "1.0", "status": "CURRENT"}]}')
        self.send_response(200 if self.path == "/" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_PUT = do_POST = do_GET

    def log_message(self, *args: Any) -> None:
        pass


class SecretTests(_Base):

    def _placement(self) -> str:
        recorder = type("Recorder", (_TokenRecorder,), {"tokens": []})
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), recorder)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        self.addCleanup(httpd.server_close)
        self.addCleanup(httpd.shutdown)
        self.recorder = recorder
        return f"http://127.0.0.1:{httpd.server_address[1]}"

    def _first_token(self, server: Process) -> str:
        deadline = time.monotonic() + 60
        while not self.recorder.tokens and time.monotonic() < deadline:
            if server.popen.poll() is not None:
                self.fail(f"serve exited: {server.log()}")
            time.sleep(0.1)
        self.assertTrue(self.recorder.tokens, server.log())
        return str(self.recorder.tokens[0])

    def test_placement_token_from_a_file_or_the_environment(self) -> None:
        url = self._placement()
        token = secrets.token_hex(16)
        token_file = self.write("token", token + "\n")
        conf = self.write("server.conf", (
            f"[placement]\nurl = {url}\ntoken_file = {token_file}\n"))
        for argv, env in ((["--config-file", conf], {}),
                          (["--placement-url", url],
                           {"OS_PLACEMENT__TOKEN": token})):
            self.recorder.tokens.clear()
            server = self.serve("--db", self.db, "--upgrade", "--port",
                                str(free_port()), "--backend", "placement",
                                *argv, **env)
            self.assertEqual(token, self._first_token(server))
            self.assertNotIn(token.encode(), _cmdline(server))
            server.stop()

    def test_placement_token_on_the_command_line_is_refused(self) -> None:
        result = self.run_server(
            "serve", "--db", self.db, "--backend", "placement",
            "--placement-url", "http://127.0.0.1:9", "--placement-token",
            "s3cret")
        self.assertEqual(2, result.returncode)
        self.assertEqual(1, len(result.stderr.strip().splitlines()),
                         result.stderr)
        self.assertIn("--placement-token is refused", result.stderr)
        self.assertIn("OS_PLACEMENT__TOKEN", result.stderr)


class DatabasePasswordTests(_Base):
    """A MariaDB user with a password: the password comes from a file."""

    def setUp(self) -> None:
        super().setUp()
        base = os.environ.get(MYSQL_ENV)
        if not base:
            raise unittest.SkipTest(f"{MYSQL_ENV} is not set")
        self.admin = create_engine(make_url(base),
                                   isolation_level="AUTOCOMMIT")
        self.addCleanup(self.admin.dispose)
        suffix = uuid.uuid4().hex[:12]
        self.name, self.user = f"test_{suffix}", f"cfg_{suffix}"
        self.password = secrets.token_hex(16)
        with self.admin.connect() as conn:
            conn.exec_driver_sql(
                f"CREATE DATABASE {self.name} CHARACTER SET utf8mb4")
            self.addCleanup(self._drop)
            conn.exec_driver_sql(
                f"CREATE USER '{self.user}'@'%%' IDENTIFIED BY "
                f"'{self.password}'")
            conn.exec_driver_sql(
                f"GRANT ALL ON {self.name}.* TO '{self.user}'@'%%'")
        host = make_url(base)
        self.url = host.set(username=self.user, password=None,
                            database=self.name).render_as_string()

    def _drop(self) -> None:
        with self.admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {self.name}")
            conn.exec_driver_sql(f"DROP USER IF EXISTS '{self.user}'@'%%'")

    def test_password_file_is_used_and_not_shown(self) -> None:
        without = self.write("without.conf",
                             f"[database]\nconnection = {self.url}\n")
        refused = self.run_server("db", "upgrade", "--config-file", without)
        self.assertEqual(1, refused.returncode, refused.stderr)
        password_file = self.write("password", self.password + "\n")
        conf = self.write("server.conf", (
            f"[database]\nconnection = {self.url}\n"
            f"password_file = {password_file}\n"))
        upgrade = self.run_server("db", "upgrade", "--config-file", conf)
        self.assertEqual(0, upgrade.returncode, upgrade.stderr)
        port = free_port()
        server = self.serve("--config-file", conf, "--port", str(port))
        _wait_answers(server, port)
        nodes = requests.get(
            f"http://127.0.0.1:{port}/v1/nodes", timeout=30,
            headers={"X-OpenStack-Ironic-API-Version": "latest"})
        self.assertEqual(200, nodes.status_code, nodes.text)
        self.assertNotIn(self.password.encode(), _cmdline(server))
        self.assertNotIn(self.password, server.log())

    def test_password_in_a_command_line_url_is_refused(self) -> None:
        url = make_url(self.url).set(password=self.password)
        result = self.run_server(
            "db", "upgrade", "--db", url.render_as_string(hide_password=False))
        self.assertEqual(2, result.returncode)
        self.assertEqual(1, len(result.stderr.strip().splitlines()),
                         result.stderr)
        self.assertIn("password_file", result.stderr)
        self.assertNotIn(self.password, result.stderr)


class BadConfigTests(_Base):

    def test_each_bad_configuration_is_one_line(self) -> None:
        missing = os.path.join(self.tmp, "missing")
        cases: list[tuple[str, list[str], dict[str, str], str]] = [
            ("missing file", ["--config-file", missing], {}, missing),
            ("unparsable", ["--config-file",
                            self.write("a.conf", "[api\nport = 1\n")], {},
             "a.conf"),
            ("bad value", ["--config-file",
                           self.write("b.conf", "[api]\nport = abc\n")], {},
             "[api] port"),
            ("bad env", [], {"OS_CONDUCTOR__WORKERS": "0"},
             "OS_CONDUCTOR__WORKERS"),
            ("token file", ["--backend", "placement", "--placement-url",
                            "http://127.0.0.1:9", "--placement-token-file",
                            missing], {}, "[placement] token_file"),
            ("password file", ["--db-password-file", missing], {},
             "[database] password_file"),
        ]
        for name, argv, env, expected in cases:
            result = self.run_server("serve", "--db", self.db, *argv, **env)
            self.assertEqual(2, result.returncode, (name, result.stderr))
            lines = result.stderr.strip().splitlines()
            self.assertEqual(1, len(lines), (name, result.stderr))
            self.assertTrue(lines[0].startswith("baremetal-alloc-server: "),
                            (name, lines))
            self.assertIn(expected, lines[0], name)
