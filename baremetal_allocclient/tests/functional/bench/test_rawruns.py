"""Raw benchmark runs stay out of the tree (``benchmarks/rawruns.py``).

Every benchmark module that writes results shows, in its ``--help``, an
``--output`` whose default is a new file under ``benchmarks/results/``,
a directory git ignores: running a benchmark from a checkout never
leaves a file for ``git status`` to report, whichever module it is.
Writing creates the directory (a fresh clone has none) and replaces the
file whole.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))
RESULTS = os.path.join(REPO, "benchmarks", "results")
#: the modules of benchmarks/ that write a run's figures to a file (the
#: others are servers and clients they start)
WRITERS = ("app_loop", "best_fit", "blank_lines", "broker", "cli_startup",
           "constraints",
           "delete_cost", "fleet_dashboard", "floor", "floor_profile",
           "frontend", "galera", "instructions", "metrics_cost", "pair",
           "private_fallbacks", "run", "steady_memory", "traits",
           "stream_wait", "watchers")
DEFAULT = re.compile(r"--output\b.*?\(default: ([^;)\s]+)", re.S)


#: prints {module: its --help} for the modules on the command line, run as
#: ``python -m`` runs them, in one process (each imports the server)
HELP = """
import contextlib, io, json, runpy, sys
helps = {}
for module in sys.argv[1:]:
    sys.argv = [module, "--help"]
    with contextlib.redirect_stdout(io.StringIO()) as text, \\
            contextlib.suppress(SystemExit):
        runpy.run_module(f"benchmarks.{module}", run_name="__main__")
    helps[module] = text.getvalue()
print(json.dumps(helps))
"""


def helps(modules: tuple[str, ...]) -> dict[str, str]:
    """Each module's ``--help``, unwrapped."""
    env = dict(os.environ, COLUMNS="1000", PYTHONPATH=os.pathsep.join(
        [REPO, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-c", HELP, *modules], cwd=REPO, env=env,
        capture_output=True, text=True, timeout=300, check=True)
    found: dict[str, str] = json.loads(proc.stdout)
    return found


class BenchmarkOutputTest(unittest.TestCase):

    def setUp(self) -> None:
        if not os.path.isfile(os.path.join(REPO, "benchmarks", "floor.py")):
            self.skipTest("no benchmarks/ beside the package")

    def test_every_default_output_is_ignored_by_git(self) -> None:
        if shutil.which("git") is None or subprocess.run(
                ["git", "rev-parse", "--is-inside-work-tree"], cwd=REPO,
                capture_output=True, check=False).returncode:
            self.skipTest("not a git checkout")
        for module, text in helps(WRITERS).items():
            match = DEFAULT.search(text)
            self.assertIsNotNone(match, (module, text))
            assert match is not None
            path = match.group(1)
            self.assertEqual(RESULTS, os.path.dirname(path), module)
            self.assertTrue(path.endswith(".json"), (module, path))
            ignored = subprocess.run(
                ["git", "check-ignore", "-q", path], cwd=REPO,
                capture_output=True, check=False)
            self.assertEqual(0, ignored.returncode,
                             f"{module}: {path} is not git-ignored")

    def test_write_makes_the_directory_and_replaces_the_file(self) -> None:
        sys.path.insert(0, REPO)
        self.addCleanup(sys.path.remove, REPO)
        from benchmarks import rawruns

        workdir = tempfile.mkdtemp(prefix="bench-output-test-")
        self.addCleanup(shutil.rmtree, workdir, True)
        path = os.path.join(workdir, "new", "deeper", "run.json")
        rawruns.write_json(path, {"round": 1, "figures": [1.5, 2.5]})
        rawruns.write_json(path, {"round": 2})
        with open(path, encoding="utf-8") as stream:
            self.assertEqual({"round": 2}, json.load(stream))
        self.assertEqual(["run.json"], os.listdir(os.path.dirname(path)))
