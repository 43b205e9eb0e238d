"""Add up the fault suite's figures per database.

Usage: ``python -m baremetal_allocclient.tests.functional.faults.figures
FILE`` where FILE is the JSON-lines file the scenarios appended to
(``BAREMETAL_ALLOC_FAULT_FIGURES``).  Prints one line per database:
``faults: <db> scenarios=N faults=N requests=N violations=N``, and the
scenarios that found violations.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any

_KEYS = ("faults", "requests", "violations")


def totals(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """database -> scenarios and the sums of faults, requests and
    violations."""
    result: dict[str, dict[str, int]] = {}
    for record in records:
        entry = result.setdefault(
            record["db"], {"scenarios": 0, **dict.fromkeys(_KEYS, 0)})
        entry["scenarios"] += 1
        for key in _KEYS:
            entry[key] += int(record[key])
    return result


def summary(records: list[dict[str, Any]]) -> list[str]:
    """The printed lines."""
    lines = [
        f"faults: {db} scenarios={t['scenarios']} faults={t['faults']} "
        f"requests={t['requests']} violations={t['violations']}"
        for db, t in sorted(totals(records).items())
    ]
    lines += [f"  {r['db']} {r['test'].rsplit('.', 1)[-1]}: "
              f"{r['violations']} violation(s), seed {r['seed']}"
              for r in records if r["violations"]]
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as stream:
        records = [json.loads(line) for line in stream if line.strip()]
    print("\n".join(summary(records)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
