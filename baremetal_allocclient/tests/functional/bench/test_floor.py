"""``python -m benchmarks.floor`` keeps working: a tiny run prints its
table (a row per request type, every figure above zero) and writes its
JSON."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))
POSTGRESQL_ENV = "BAREMETAL_ALLOC_TEST_POSTGRESQL_URL"
LABELS = ("create, Prefer: wait", "GET one (a poll)", "list of 10")
#: body B, server CPU ms, floor HTTP ms, floor SQL ms, ratio
ROW = re.compile(r"^(\w+)\s+(.+?)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+"
                 r"([\d.]+)\s+([\d.]+)x$")


class FloorBenchmarkTest(unittest.TestCase):

    def run_floor(self, db: str) -> None:
        if not os.path.isfile(os.path.join(REPO, "benchmarks", "floor.py")):
            self.skipTest("no benchmarks/ beside the package")
        output = os.path.join(tempfile.mkdtemp(prefix="floor-test-"),
                              "floor.json")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [REPO, os.environ.get("PYTHONPATH", "")]))
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.floor", "--db", db,
             "--allocations", "10", "--gets", "20", "--lists", "3",
             "--list-size", "10", "--output", output],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
            check=False)
        self.assertEqual(0, proc.returncode, proc.stderr[-3000:])
        rows = [match.groups() for line in proc.stdout.splitlines()
                if (match := ROW.match(line))]
        self.assertEqual([(db, label) for label in LABELS],
                         [row[:2] for row in rows], proc.stdout)
        for row in rows:
            self.assertTrue(all(float(x) > 0 for x in row[2:]), row)
        self.assertIn("load average (1, 5, 15 min): start", proc.stdout)
        with open(output) as stream:
            result = json.load(stream)["results"][db]
        self.assertEqual({"create", "get", "list"},
                         set(result["server_cpu_ms"]))
        self.assertGreater(result["body_bytes"]["list"],
                           result["body_bytes"]["get"])

    def test_sqlite(self) -> None:
        self.run_floor("sqlite")

    def test_postgresql(self) -> None:
        if not os.environ.get(POSTGRESQL_ENV):
            self.skipTest(f"{POSTGRESQL_ENV} is not set")
        self.run_floor("postgresql")
