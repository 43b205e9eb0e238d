"""Real Ironic for the benchmark, started by the functional-test launcher.

The virtualenv install, ``ironic.conf`` (all-in-one, ``fake-hardware``,
``noauth``, SQLite, one API worker) and the process handling are those of
``baremetal_allocclient.tests.functional.targets``; this module only adds
what a benchmark needs on top: the server's PID (for RSS), and a way to grow
the fleet faster than Ironic's API enrolls (3-4 nodes/s).

Growing the fleet copies the database row of a node that was enrolled
through the API and reached ``available`` / ``power off`` there, changing
only ``uuid`` and ``name``; its traits are none.  Ironic's allocation code
reads these rows exactly as it reads API-enrolled ones, so the selection
cost it shows is honest; what is skipped is only Ironic's enrollment work.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from typing import Any

from baremetal_allocclient.tests.functional import targets


def start() -> targets.Target:
    """A fresh real-Ironic process (not the per-test-process singleton)."""
    return targets.start_ironic()


def database_path(target: targets.Target) -> str:
    """Ironic's SQLite file (see ``targets.ironic_config``)."""
    return os.path.join(target.workdir, "ironic.sqlite")


def clone_nodes(target: targets.Target, template_uuid: str,
                count: int) -> int:
    """Insert ``count`` copies of an API-enrolled node; returns the total
    number of nodes afterwards."""
    conn = sqlite3.connect(database_path(target), timeout=60)
    try:
        conn.row_factory = sqlite3.Row
        row = conn.execute("SELECT * FROM nodes WHERE uuid = ?",
                           (template_uuid,)).fetchone()
        if row is None:
            raise RuntimeError(f"template node {template_uuid} not found")
        template: dict[str, Any] = dict(row)
        for key in ("id", "name", "instance_uuid", "allocation_id",
                    "reservation"):
            template.pop(key, None)
        columns = ["uuid", *[k for k in template if k != "uuid"]]
        placeholders = ", ".join("?" for _ in columns)
        sql = (f"INSERT INTO nodes ({', '.join(columns)}) "
               f"VALUES ({placeholders})")
        rows = ([str(uuid.uuid4()), *[template[k] for k in columns[1:]]]
                for _ in range(count))
        with conn:
            conn.executemany(sql, rows)
        total: int = conn.execute("SELECT count(*) FROM nodes").fetchone()[0]
        return total
    finally:
        conn.close()
