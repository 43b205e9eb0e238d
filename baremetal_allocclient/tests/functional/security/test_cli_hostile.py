"""Both CLIs given hostile arguments: a usage or API error, no traceback.

Huge values, unicode, shell/SQL/path injection attempts in names, idents
and ``--extra``.  Whatever is accepted must round-trip unchanged; nothing
may be executed or corrupt the server's state.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence

import testtools

from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)
from baremetal_allocclient.tests.functional.security import _support as sup

USAGE, API_ERROR, OK = 2, 1, 0
_BIG = "x" * 120_000  # just under Linux's per-argument limit


class HostileCliTests(testtools.TestCase):

    server: InProcessServer

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.server = serve_for_class(cls)

    def _run(self, frontend: str, args: Sequence[str]) -> tuple[int, str]:
        if frontend == "openstack":
            argv = ["--os-auth-type", "none", "--os-endpoint",
                    self.server.endpoint, "baremetal", "allocation", *args]
        else:
            argv = ["--os-endpoint", self.server.endpoint, *args]
        result = sup.command(frontend, argv, timeout=60)
        output = result.stdout + result.stderr
        self.assertNotIn("Traceback", output, args)
        return result.returncode, output

    def _expect(self, code: int, args: Sequence[str],
                frontends: Sequence[str] = ("baremetal-alloc",)) -> str:
        output = ""
        for frontend in frontends:
            returned, output = self._run(frontend, args)
            self.assertEqual(code, returned,
                             f"{frontend} {[a[:40] for a in args]}: "
                             f"{output[-1500:]}")
        return output

    def test_huge_values_are_api_errors(self) -> None:
        both = ("baremetal-alloc", "openstack")
        out = self._expect(API_ERROR, ["create", "--resource-class", _BIG],
                           both)
        self.assertIn("HTTP 400", out)
        self.assertLess(len(out), 20_000)  # the message is not the value
        self._expect(API_ERROR, ["create", "--resource-class", "rc",
                                 "--name", _BIG])
        # Traits are checked before anything is sent (usage error).
        self._expect(USAGE, ["create", "--resource-class", "rc",
                             "--trait", "CUSTOM_" + "A" * 300])
        self._expect(API_ERROR, ["show", _BIG], both)
        many = [arg for i in range(60) for arg in ("--trait", f"CUSTOM_{i}")]
        self._expect(API_ERROR, ["create", "--resource-class", "rc", *many])
        extras = [arg for i in range(10)
                  for arg in ("--extra", f"k{i}={_BIG}")]
        out = self._expect(API_ERROR, ["create", "--resource-class", "rc",
                                       *extras])
        self.assertIn("413", out)

    def test_injection_attempts_in_names(self) -> None:
        marker = os.path.join(self.server.tmpdir, "pwned")
        for name in ("'; DROP TABLE allocations; --", f"$(touch {marker})",
                     f"`touch {marker}`", "../../etc/passwd", "a b",
                     "名前", "\u202eevil", "%00", "{{7*7}}", "<script>"):
            self._expect(API_ERROR, ["create", "--resource-class", "rc",
                                     "--name", name])
            self._expect(API_ERROR, ["show", name])
            self._expect(API_ERROR, ["delete", name])
        self.assertFalse(os.path.exists(marker))
        self.server.expect(200, "GET", "/v1/allocations")

    def test_usage_errors(self) -> None:
        for args in (
            ["create", "--resource-class", "rc", "--extra", "no-equals"],
            ["create", "--resource-class", "rc", "--wait", "-5"],
            ["create", "--resource-class", "rc", "--count", "0"],
            ["create", "--resource-class", "rc", "--count", "1e9"],
            ["create", "--resource-class", "rc", "--count", "100000000000"],
            ["list", "--limit", "-1"],
            ["list", "--limit", "abc"],
            ["list", "--sort", "name:sideways"],
            ["create", "--bogus-option"],
            ["no-such-command"],
            ["--timeout", "nan", "list"],
            ["--timeout", "-1", "list"],
            ["--timeout", "1e400", "list"],
            ["watch", "--poll-interval", "0"],
            ["watch", "--since", "-5"],
            ["watch", "--since", "9" * 5000],
        ):
            self._expect(USAGE, args)
        returned, _out = self._run("baremetal-alloc", ["create"])
        self.assertIn(returned, (USAGE, API_ERROR))

    def test_injection_in_filters_matches_nothing(self) -> None:
        # Filters are bound parameters: a quote is just a value.  The
        # state filter is checked against the three states first.
        for option in ("--resource-class", "--owner"):
            out = self._expect(OK, ["list", option,
                                    "x' OR '1'='1", "-f", "json"])
            self.assertEqual([], json.loads(out))
        self._expect(USAGE, ["list", "--state", "x' OR '1'='1"])
        # Sent raw, past the CLI, the server's filter still matches
        # nothing, as Ironic's does.
        listed = self.server.expect(
            200, "GET", "/v1/allocations?state=x%27%20OR%20%271%27%3D%271")
        self.assertEqual([], listed["allocations"])

    def test_hostile_endpoints(self) -> None:
        for endpoint in ("javascript:alert(1)", "file:///etc/passwd",
                         "http://127.0.0.1:1", "http://[::1"):
            result = sup.command("baremetal-alloc",
                                 ["--os-endpoint", endpoint, "list"],
                                 timeout=60)
            self.assertIn(result.returncode, (USAGE, API_ERROR), endpoint)
            self.assertNotIn("Traceback", result.stderr)

    def test_unicode_and_markup_round_trip_in_extra(self) -> None:
        name = "u-" + uuid.uuid4().hex[:8]
        extra = {"ключ": "значение 名前 \u202e", "k": "'; DROP TABLE x; --",
                 "html": "<script>alert(1)</script>", "eq": "a=b=c",
                 "nested/path": "slash", "tilde~0": "t"}
        args = ["create", "--resource-class", "rc", "--name", name,
                "-f", "json"]
        for key, value in extra.items():
            args += ["--extra", f"{key}={value}"]
        out = self._expect(OK, args)
        self.addCleanup(self.server.request, "DELETE",
                        f"/v1/allocations/{name}")
        self.assertEqual(extra, json.loads(out)["extra"])
        stored = self.server.expect(200, "GET", f"/v1/allocations/{name}")
        self.assertEqual(extra, stored["extra"])
        out = self._expect(OK, ["set", name, "--extra", "ключ=другое",
                                "--extra", "nested/path=x"],
                           ("baremetal-alloc", "openstack"))
        stored = self.server.expect(200, "GET", f"/v1/allocations/{name}")
        self.assertEqual("другое", stored["extra"]["ключ"])
        self.assertEqual("x", stored["extra"]["nested/path"])

    def test_server_log_has_no_traceback(self) -> None:
        self._expect(API_ERROR, ["create", "--resource-class", "rc",
                                 "--name", "'; DROP TABLE x"])
        self.assertNotIn("Traceback", self.server.log())
        self.assertNotIn("Unexpected error", self.server.log())
