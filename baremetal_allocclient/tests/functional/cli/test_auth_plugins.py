"""``baremetal-alloc`` and keystoneauth: every plugin, one-line failures.

The identity service is a small keystone stand-in on loopback: it answers
version discovery and refuses every token request with 401, as keystone
does for a wrong password.
"""

from __future__ import annotations

import http.server
import json
import os
import tempfile
import threading
from typing import Any

import testtools

from baremetal_allocclient.tests.fixtures.processes import free_port
from baremetal_allocclient.tests.functional.cli import clirunner


class _Keystone(http.server.BaseHTTPRequestHandler):
    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("x-openstack-request-id", "req-ks-1")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        port = self.server.server_address[1]
        self._send(200, {"version": {
            "id": "v3.14", "status": "stable",
            "links": [{"rel": "self",
                       "href": f"http://127.0.0.1:{port}/v3/"}]}})

    def do_POST(self) -> None:
        self._send(401, {"error": {
            "code": 401, "title": "Unauthorized",
            "message": "The request you have made requires "
                       "authentication."}})

    def log_message(self, *args: Any) -> None:
        pass


class AuthPluginTest(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Keystone)
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.auth_url = f"http://127.0.0.1:{server.server_address[1]}/v3"

    def alloc(self, *args: str, env: dict[str, str] | None = None
              ) -> clirunner.CliResult:
        return clirunner.run(clirunner.STANDALONE, None, *args,
                             env=env, timeout=120)

    def assertOneLine(self, result: clirunner.CliResult, text: str) -> None:
        self.assertEqual(1, result.returncode, repr(result))
        self.assertEqual([text], result.stderr.strip().splitlines(),
                         repr(result))

    def test_help_lists_each_plugins_options(self) -> None:
        for plugin, option in (("v3totp", "--os-passcode"),
                               ("v3applicationcredential",
                                "--os-application-credential-secret"),
                               ("v3oidcpassword", "--os-client-id"),
                               ("v3multifactor", "--os-auth-methods"),
                               ("token", "--os-token")):
            result = self.alloc("--os-auth-type", plugin, "--help")
            self.assertEqual(0, result.returncode, repr(result))
            self.assertIn(option, result.stdout, plugin)
        from_env = self.alloc("--help", env={"OS_AUTH_TYPE": "v3totp"})
        self.assertIn("--os-passcode", from_env.stdout)

    def test_wrong_password_is_one_line(self) -> None:
        result = self.alloc(
            "--os-auth-url", self.auth_url, "--os-username", "u",
            "--os-password", "wrong", "--os-project-name", "p",
            "--os-user-domain-name", "Default",
            "--os-project-domain-name", "Default", "list")
        self.assertOneLine(
            result, "Cannot determine the bare metal endpoint: The request "
            "you have made requires authentication. (HTTP 401) "
            "(Request-ID: req-ks-1)")

    def test_plugin_from_environment_and_clouds_yaml(self) -> None:
        env = {"OS_AUTH_TYPE": "v3applicationcredential",
               "OS_AUTH_URL": self.auth_url,
               "OS_APPLICATION_CREDENTIAL_ID": "id",
               "OS_APPLICATION_CREDENTIAL_SECRET": "s"}
        self.assertIn("(HTTP 401)", self.alloc("list", env=env).stderr)
        workdir = tempfile.mkdtemp(prefix="bm-alloc-clouds-")
        self.addCleanup(__import__("shutil").rmtree, workdir, True)
        with open(os.path.join(workdir, "clouds.yaml"), "w") as handle:
            handle.write(
                "clouds:\n  appcred:\n"
                "    auth_type: v3applicationcredential\n"
                f"    auth:\n      auth_url: {self.auth_url}\n"
                "      application_credential_id: id\n"
                "      application_credential_secret: s\n")
        result = self.alloc("--os-cloud", "appcred", "list",
                            env={"OS_CLIENT_CONFIG_FILE": os.path.join(
                                workdir, "clouds.yaml")})
        self.assertEqual(1, result.returncode, repr(result))
        self.assertIn("(HTTP 401)", result.stderr)
        self.assertEqual(1, result.stderr.count("(HTTP 401)"))

    def test_unreachable_identity_service_is_one_line(self) -> None:
        url = f"http://127.0.0.1:{free_port()}/v3"
        result = self.alloc("--os-auth-url", url, "--os-username", "u",
                            "--os-password", "p", "--os-project-name", "p",
                            "list")
        self.assertOneLine(result, f"Unable to reach the identity service "
                                   f"at {url}: Connection refused")
