"""``python -m benchmarks.instructions`` keeps working: a tiny run on
SQLite prints a row per request with every count above zero, the
server's above its HTTP floor's, and writes its JSON.

It starts nine Python processes under valgrind (about three minutes), so
it runs only with ``BAREMETAL_ALLOC_BENCH_VALGRIND=1`` and valgrind on
``PATH``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import unittest

from baremetal_allocclient.tests.functional.bench.test_floor import (
    run_benchmark,
)

ENABLE_ENV = "BAREMETAL_ALLOC_BENCH_VALGRIND"
#: server, HTTP floor, SQL floor, ratio, served floor, ratio, app in a
#: loop, ratio (thousands of instructions, with thousands separators)
ROW = re.compile(r"^sqlite\s+(create|get)\s+([\d,]+)\s+([\d,]+)\s+"
                 r"([\d,]+)\s+([\d.]+)x\s+([\d,]+)\s+([\d.]+)x\s+"
                 r"([\d,]+)\s+([\d.]+)x$")


@unittest.skipUnless(os.environ.get(ENABLE_ENV, "") not in ("", "0"),
                     f"{ENABLE_ENV}=1 runs it (about three minutes)")
class InstructionsBenchmarkTest(unittest.TestCase):

    def test_sqlite(self) -> None:
        if shutil.which("valgrind") is None:
            self.skipTest("valgrind is not on PATH")
        stdout, output = run_benchmark(
            self, "benchmarks.instructions", "--db", "sqlite",
            "--creates", "10", "40", "--gets", "300")
        rows = {match.group(1): [float(x.replace(",", ""))
                                 for x in match.groups()[1:]]
                for line in stdout.splitlines()
                if (match := ROW.match(line))}
        self.assertEqual({"create", "get"}, set(rows), stdout)
        for request, figures in rows.items():
            self.assertTrue(all(x > 0 for x in figures), (request, stdout))
            server, http = figures[0], figures[1]
            self.assertGreater(server, http, (request, stdout))
        with open(output) as stream:
            result = json.load(stream)["results"]["sqlite"]
        self.assertEqual({"server", "http", "served", "app", "sql"},
                         set(result["instructions"]))
        self.assertEqual({"create", "get"}, set(result["ratio"]))
