"""``python -m benchmarks.floor`` and ``benchmarks.floor_profile`` keep
working: a tiny run of the first prints its table (a row per request
type, every figure above zero, the served floor's too) and writes its
JSON; one of the second profiles the create and the poll handlers."""

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
POSTGRESQL_ENV = "BAREMETAL_ALLOC_TEST_POSTGRESQL_URL"
LABELS = ("create, Prefer: wait", "GET one (a poll)", "list of 10")
#: body B, server CPU ms, floor HTTP ms, floor SQL ms, ratio, served
#: floor ms, ratio to it
ROW = re.compile(r"^(\w+)\s+(.+?)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+"
                 r"([\d.]+)\s+([\d.]+)x\s+([\d.]+)\s+([\d.]+)x$")


def run_benchmark(case: unittest.TestCase, module: str, *args: str
                  ) -> tuple[str, str]:
    """Run ``python -m module args --output F``; its stdout and F."""
    if not os.path.isfile(os.path.join(REPO, "benchmarks", "floor.py")):
        case.skipTest("no benchmarks/ beside the package")
    workdir = tempfile.mkdtemp(prefix="floor-test-")
    case.addCleanup(shutil.rmtree, workdir, True)
    output = os.path.join(workdir, "result.json")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [REPO, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-m", module, *args, "--output", output],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
        check=False)
    case.assertEqual(0, proc.returncode, proc.stderr[-3000:])
    return proc.stdout, output


class FloorBenchmarkTest(unittest.TestCase):

    def run_floor(self, db: str) -> None:
        stdout, output = run_benchmark(
            self, "benchmarks.floor", "--db", db, "--allocations", "10",
            "--gets", "20", "--lists", "3", "--list-size", "10")
        rows = [match.groups() for line in stdout.splitlines()
                if (match := ROW.match(line))]
        self.assertEqual([(db, label) for label in LABELS],
                         [row[:2] for row in rows], stdout)
        for row in rows:
            self.assertTrue(all(float(x) > 0 for x in row[2:]), row)
        self.assertIn("load average (1, 5, 15 min): start", stdout)
        with open(output) as stream:
            result = json.load(stream)["results"][db]
        for figure in ("server_cpu_ms", "served_floor_ms", "ratio_served"):
            self.assertEqual({"create", "get", "list"}, set(result[figure]))
            self.assertTrue(all(value > 0
                                for value in result[figure].values()))
        self.assertGreater(result["body_bytes"]["list"],
                           result["body_bytes"]["get"])
        # The rounds' spread around the median ratio, printed and kept.
        for request, (low, high) in result["ratio_range"].items():
            self.assertLessEqual(low, result["ratio"][request])
            self.assertLessEqual(result["ratio"][request], high)
        self.assertIn(f"{db}: the ratio to HTTP + SQL, lowest and highest "
                      f"round: create, Prefer: wait ", stdout)
        # PostgreSQL's backends are counted; SQLite's work is in the
        # server's process, counted there.
        backends = result["database_cpu_ms"]
        for part in ("server", "sql"):
            self.assertEqual(db == "postgresql", all(
                value > 0 for value in backends[part].values()), backends)
        self.assertEqual(db == "postgresql",
                         "the database's backends" in stdout, stdout)
        self.assertEqual({"create", "get", "list"},
                         set(result["ratio_with_databases"]))

    def test_sqlite(self) -> None:
        self.run_floor("sqlite")

    def test_postgresql(self) -> None:
        if not os.environ.get(POSTGRESQL_ENV):
            self.skipTest(f"{POSTGRESQL_ENV} is not set")
        self.run_floor("postgresql")

    def test_profile(self) -> None:
        # Enough requests that the handlers outweigh the background
        # threads (queue rounds, heartbeat) on a loaded machine: with 5
        # creates the queue rounds' loop once came first.
        stdout, output = run_benchmark(
            self, "benchmarks.floor_profile", "--allocations", "40",
            "--gets", "80")
        self.assertIn("profile of create (40 requests", stdout)
        self.assertIn("profile of poll (80 requests", stdout)
        with open(output) as stream:
            result = json.load(stream)
        for phase, handler in (("create", "create_allocation"),
                               ("poll", "get_allocation")):
            self.assertGreater(result[phase]["by_group_ms"]["SQLAlchemy"],
                               0)
            self.assertIn(handler, " ".join(
                row[0] for row in result[phase]["top_cumulative"]))


class PairBenchmarkTest(unittest.TestCase):
    """``python -m benchmarks.pair`` compares two trees' servers (here
    this tree with itself): a line per database and request, the
    rounds of both sides in its JSON."""

    def test_sqlite(self) -> None:
        stdout, output = run_benchmark(
            self, "benchmarks.pair", "--before", REPO, "--db", "sqlite",
            "--rounds", "2", "--creates", "3", "--gets", "5", "--lists", "2")
        lines = [line.split() for line in stdout.splitlines()]
        self.assertEqual(
            [["sqlite", "create"], ["sqlite", "get"], ["sqlite", "list"]],
            [line[:2] for line in lines], stdout)
        with open(output) as stream:
            result = json.load(stream)["results"]["sqlite"]
        for request in ("create", "get", "list"):
            figures = result[request]
            self.assertEqual(
                (2, 2), (len(figures["rounds"]["before"]),
                         len(figures["rounds"]["after"])))
            self.assertGreater(figures["ratio"], 0)
            self.assertGreater(figures["before_ms"], 0)


class AppLoopBenchmarkTest(unittest.TestCase):
    """``python -m benchmarks.app_loop`` calls the assembled application
    in a loop beside the SQL floor: a line per request, its figures in
    its JSON."""

    def test_sqlite(self) -> None:
        stdout, output = run_benchmark(
            self, "benchmarks.app_loop", "--db", "sqlite",
            "--allocations", "10", "--gets", "20", "--rounds", "2")
        rows = [line.split() for line in stdout.splitlines()
                if line.startswith("sqlite ")]
        self.assertEqual([["sqlite", "create"], ["sqlite", "get"]],
                         [row[:2] for row in rows], stdout)
        with open(output) as stream:
            result = json.load(stream)["results"]["sqlite"]
        for figure in ("app_cpu_ms", "sql_floor_ms", "ratio"):
            self.assertEqual({"create", "get"}, set(result[figure]))
            self.assertTrue(all(value > 0
                                for value in result[figure].values()))
        self.assertEqual(2, len(result["rounds"]["app"]["create"]))


class TraitsBenchmarkTest(unittest.TestCase):
    """``python -m benchmarks.traits`` times creates with traits on
    fleets of the sizes given: a line per size, its rounds in its JSON."""

    def test_sqlite(self) -> None:
        stdout, output = run_benchmark(
            self, "benchmarks.traits", "--db", "sqlite", "--fleet", "60",
            "120", "--creates", "10", "--rounds", "2")
        lines = [line.split() for line in stdout.splitlines()]
        self.assertEqual([["sqlite", "60"], ["sqlite", "120"]],
                         [line[:2] for line in lines[1:3]], stdout)
        with open(output) as stream:
            result = json.load(stream)["results"]["sqlite"]
        for nodes in ("60", "120"):
            self.assertEqual(2, len(result[nodes]["rounds"]["create"]))
            self.assertGreater(result[nodes]["create_cpu_ms"], 0)
            self.assertIsNone(result[nodes]["database_cpu_ms"])
