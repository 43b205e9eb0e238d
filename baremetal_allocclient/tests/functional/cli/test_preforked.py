"""The suite's forked console scripts behave as plain subprocesses.

Most command-line tests run ``openstack``, ``baremetal`` and
``baremetal-alloc`` through :mod:`baremetal_allocclient.tests.fixtures.
preforked`; what those tests check is only worth something if a forked
command sees and prints what a fresh process would.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import testtools

from baremetal_allocclient.tests.fixtures import preforked
from baremetal_allocclient.tests.functional.cli import clirunner

_MODULE = '''\
import atexit, json, os, sys

ARGV_AT_IMPORT = list(sys.argv)
HOME_AT_IMPORT = os.environ.get("HOME")


def main(argv=sys.argv[1:]):
    atexit.register(lambda: print("atexit ran", file=sys.stderr))
    print(json.dumps({
        "argv": argv, "argv_at_import": ARGV_AT_IMPORT,
        "home_at_import": HOME_AT_IMPORT, "path0": sys.path[0],
        "cwd": os.getcwd(), "env": os.environ.get("PREFORKED_PROBE"),
        "stdin": sys.stdin.read(), "tty": sys.stdout.isatty(),
        "main": sys.modules["__main__"].__file__}))
    print("to stderr \\u00e9", file=sys.stderr)
    if argv and argv[0] == "raise":
        raise RuntimeError("boom")
    if argv and argv[0] == "sleep":
        import time
        time.sleep(60)
    return 3
'''


class PreforkedTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.dir = self.useFixture_tempdir()
        with open(os.path.join(self.dir, "probe_cli.py"), "w",
                  encoding="utf-8") as stream:
            stream.write(_MODULE)
        self.script = os.path.join(self.dir, "probe")
        with open(self.script, "w", encoding="utf-8") as stream:
            stream.write(f"#!{sys.executable}\nimport sys\n"
                         "from probe_cli import main\n"
                         "if __name__ == '__main__':\n"
                         "    sys.exit(main())\n")
        os.chmod(self.script, 0o755)

    def useFixture_tempdir(self) -> str:
        tmp = tempfile.TemporaryDirectory(prefix="preforked-test-")
        self.addCleanup(tmp.cleanup)
        return tmp.name

    def both(self, argv: list[str], env: dict[str, str], cwd: str,
             input: str = "") -> tuple[subprocess.CompletedProcess[str],
                                       subprocess.CompletedProcess[str]]:
        plain = subprocess.run(argv, capture_output=True, text=True,
                               env=env, cwd=cwd, input=input, timeout=60,
                               check=False)
        forked = preforked.run(argv, env=env, cwd=cwd, input=input,
                               timeout=60)
        return plain, forked

    def assertSameRun(self, plain: subprocess.CompletedProcess[str],
                      forked: subprocess.CompletedProcess[str]) -> None:
        self.assertEqual(
            (plain.returncode, plain.stdout, plain.stderr),
            (forked.returncode, forked.stdout, forked.stderr))

    def test_what_the_command_sees(self) -> None:
        """argv (also as bound at import), sys.path[0], cwd, environment
        (also as read at import), stdin, streams, exit code, atexit."""
        for home, cwd, args in (("/home/a", self.dir, ["x", "y"]),
                                ("/home/b", "/", ["z"]),
                                ("/home/a", self.dir, [])):
            env = clirunner.clean_env({"PREFORKED_PROBE": home,
                                       "HOME": home})
            plain, forked = self.both([self.script, *args], env, cwd,
                                      input="in\n")
            self.assertSameRun(plain, forked)
            self.assertEqual(3, forked.returncode)
            self.assertIn(f'"argv_at_import": ["{self.script}"',
                          forked.stdout)
            self.assertIn(f'"home_at_import": "{home}"', forked.stdout)
            self.assertIn("atexit ran", forked.stderr)

    def test_uncaught_exception(self) -> None:
        plain, forked = self.both([self.script, "raise"],
                                  clirunner.clean_env(), self.dir)
        self.assertEqual(1, forked.returncode)
        self.assertIn("RuntimeError: boom", forked.stderr)
        self.assertEqual(plain.stdout, forked.stdout)

    def test_the_project_command_lines(self) -> None:
        """Usage errors and an unreachable server, from both programs."""
        for argv in (["baremetal-alloc", "--bogus"],
                     ["baremetal-alloc", "list", "--limit", "x"],
                     ["baremetal-alloc", "--os-endpoint",
                      "http://127.0.0.1:9", "show", "a"],
                     ["openstack", "--os-auth-type", "none",
                      "--os-endpoint", "http://127.0.0.1:9", "baremetal",
                      "allocation", "list", "--limit", "x"]):
            argv = [os.path.join(clirunner.BIN_DIR, argv[0]), *argv[1:]]
            plain, forked = self.both(argv, clirunner.clean_env(), self.dir)
            self.assertSameRun(plain, forked)
            self.assertNotEqual(0, forked.returncode)

    def test_timeout_kills_the_command(self) -> None:
        env = clirunner.clean_env()
        self.assertRaises(subprocess.TimeoutExpired, preforked.run,
                          [self.script, "sleep"], env=env, cwd=self.dir,
                          timeout=2)
        after = preforked.run([self.script], env=env, cwd=self.dir,
                              timeout=60)
        self.assertEqual(3, after.returncode)
