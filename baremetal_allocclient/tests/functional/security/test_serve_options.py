"""``serve`` refuses insecure or broken security settings before listening."""

from __future__ import annotations

import os
import socket

import testtools

from baremetal_allocclient.tests.functional.security import _support as sup


class ServeOptionTests(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.server = sup.SecureServer()
        self.addCleanup(self.server.cleanup)
        self.assertEqual(0, self.server.run(
            "db", "upgrade", "--db", self.server.db_url).returncode)
        busy = socket.socket()
        self.addCleanup(busy.close)
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        self.busy_port = int(busy.getsockname()[1])

    def _serve(self, *args: str) -> tuple[int, str]:
        # A port already taken: a run that passes every check still ends.
        result = self.server.run("serve", "--db", self.server.db_url,
                                 "--port", str(self.busy_port), *args)
        self.assertNotIn("Traceback", result.stderr)
        return result.returncode, result.stderr

    def test_noauth_on_a_non_loopback_address_is_refused(self) -> None:
        for host in ("0.0.0.0", "::", "192.0.2.10"):
            code, err = self._serve("--host", host)
            self.assertEqual(2, code, err)
            self.assertIn("--allow-unauthenticated-remote-access", err)
            self.assertIn("not a loopback address", err)

    def test_noauth_is_the_default_on_loopback(self) -> None:
        # Passes the security check and fails later, binding the port.
        code, err = self._serve("--host", "127.0.0.1")
        self.assertEqual(1, code)
        self.assertIn("cannot listen", err)

    def test_broken_files_are_reported(self) -> None:
        creds = sup.write_credentials(self.server.tmpdir)
        plain = os.path.join(self.server.tmpdir, "plain")
        with open(plain, "w", encoding="utf-8") as stream:
            stream.write("alice:{SHA}abc\n")
        bad_map = os.path.join(self.server.tmpdir, "map.yaml")
        with open(bad_map, "w", encoding="utf-8") as stream:
            stream.write("users: {alice: {roles: [member]}}\n")
        for args, expected in (
            (("--auth-strategy", "http_basic"), "needs --htpasswd"),
            (("--auth-strategy", "http_basic", "--htpasswd", plain),
             "bcrypt"),
            (("--auth-strategy", "http_basic", "--htpasswd",
              creds.htpasswd, "--auth-projects", bad_map), "project"),
            (("--auth-strategy", "http_basic", "--htpasswd", "/nonexistent"),
             "cannot read"),
            (("--tls-cert", creds.htpasswd), "go together"),
            (("--tls-cert", creds.htpasswd, "--tls-key", creds.htpasswd),
             "cannot load TLS"),
        ):
            code, err = self._serve(*args)
            self.assertEqual(2, code, (args, err))
            self.assertIn(expected, err, args)
