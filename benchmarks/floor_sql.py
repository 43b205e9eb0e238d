"""The SQL floor: the database work of each request, with the bare driver.

For :mod:`benchmarks.floor`.  The statements a request cannot do without,
run with the database's own driver (stdlib :mod:`sqlite3`, or ``psycopg``
for PostgreSQL) on a database made by the project's own migrations and
enrolled like the server's:

* **create**: store the allocation (one transaction), read a window of
  candidates along the selection index from a random node id (the query
  the server runs, wrapping around when the window is short), then give
  the first free one to the allocation with a compare-and-set ``UPDATE``
  of the node and mark the allocation ``active`` (a second transaction);
* **get**: the allocation and its node's UUID by the allocation's UUID
  (one ``SELECT`` with a join, as the server reads it);
* **list**: the first ``limit`` allocations with their nodes' UUIDs, in id
  order.

The figure is the CPU time of the calling thread (``time.thread_time``)
per operation: the driver's and SQLite's work on SQLite; on PostgreSQL the
client side only (the database server's own CPU is not counted, as it is
not in the reference server's figure either).
"""

from __future__ import annotations

import datetime
import random
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

WINDOW = 32  # candidates per search, as the server's CANDIDATE_WINDOW
# The JSON columns a view shows are read as the text they were stored as,
# as the server reads them ("{text}" is PostgreSQL's cast, which keeps its
# driver from decoding them; SQLite's driver returns text anyway).
COLUMNS = ("allocations.id, allocations.uuid, allocations.name, "
           "allocations.node_id, allocations.state, allocations.last_error, "
           "allocations.funnel_error, allocations.resource_class, "
           "allocations.traits{text}, allocations.candidate_nodes{text}, "
           "allocations.extra{text}, allocations.owner, "
           "allocations.constraints, "
           "allocations.conductor_affinity, allocations.queue_deadline, "
           "allocations.created_at, allocations.updated_at, nodes.uuid")
INSERT = ("INSERT INTO allocations (uuid, state, resource_class, traits, "
          "candidate_nodes, extra, conductor_affinity, created_at) "
          "VALUES (?, 'allocating', ?, '[]', '[]', '{}', 'bench', ?) "
          "RETURNING id")
# As the server writes it for each database
# (``server/db/planner_hints.py``): on SQLite "+ 0" and "|| ''" keep the
# planner off the unique indexes; on PostgreSQL the order is the
# selection index's (see the plans in doc/source/internals/benchmarks.rst).
WINDOW_QUERY = ("SELECT id, name, uuid FROM nodes WHERE resource_class = ? "
                "AND provision_state = 'available' AND maintenance = ? "
                "AND power_state IS NOT NULL "
                "AND {instance_uuid} IS NULL "
                "AND {allocation_id} IS NULL AND parent_node IS NULL "
                "AND id {op} ? ORDER BY {order} LIMIT ?")
_SQLITE_WINDOW = {"instance_uuid": "(instance_uuid || '')",
                  "allocation_id": "allocation_id + 0", "order": "id"}
_POSTGRESQL_WINDOW = {
    "instance_uuid": "instance_uuid", "allocation_id": "allocation_id",
    "order": "resource_class, provision_state, maintenance, id"}
TAKE_NODE = ("UPDATE nodes SET allocation_id = ?, instance_uuid = ?, "
             "instance_info = ?, updated_at = ? WHERE id = ? "
             "AND allocation_id IS NULL AND instance_uuid IS NULL "
             "AND provision_state = 'available' AND maintenance = ? "
             "AND resource_class = ?")
ACTIVATE = ("UPDATE allocations SET state = 'active', node_id = ?, "
            "updated_at = ? WHERE id = ?")
GET = (f"SELECT {COLUMNS} FROM allocations LEFT OUTER JOIN nodes "
       "ON nodes.id = allocations.node_id WHERE allocations.uuid = ?")
LIST = (f"SELECT {COLUMNS} FROM allocations LEFT OUTER JOIN nodes "
        "ON nodes.id = allocations.node_id ORDER BY allocations.id LIMIT ?")
SQLITE_PRAGMAS = ("PRAGMA busy_timeout = 30000", "PRAGMA journal_mode = WAL",
                  "PRAGMA synchronous = NORMAL", "PRAGMA foreign_keys = ON")


class Driver:
    """One connection of the bare driver, in autocommit mode."""

    def __init__(self, url: str) -> None:
        self.sqlite = url.startswith("sqlite")
        if self.sqlite:
            # The served floor (benchmarks.hello_serve) uses it from the
            # front end's request threads, one at a time.
            self.conn: Any = sqlite3.connect(
                url.split(":///", 1)[1], isolation_level=None,
                check_same_thread=False)
            for pragma in SQLITE_PRAGMAS:
                self.conn.execute(pragma)
        else:
            import psycopg

            plain = url.replace("postgresql+psycopg://", "postgresql://")
            self.conn = psycopg.connect(plain, autocommit=True)

    def execute(self, sql: str, params: Sequence[Any]) -> Any:
        if not self.sqlite:
            sql = sql.replace("?", "%s").replace("{text}", "::text")
        else:
            sql = sql.replace("{text}", "")
        return self.conn.execute(sql, params)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction (SQLite: ``BEGIN IMMEDIATE``, as the server)."""
        if not self.sqlite:
            with self.conn.transaction():
                yield
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def now(self) -> Any:
        moment = datetime.datetime.now(datetime.timezone.utc).replace(
            tzinfo=None)
        return str(moment) if self.sqlite else moment

    def close(self) -> None:
        self.conn.close()


class Floor:
    """The floor operations on one database with ``resource_class`` nodes."""

    def __init__(self, url: str, resource_class: str) -> None:
        self.db = Driver(url)
        self.rc = resource_class
        self.highest = int(self.db.execute(
            "SELECT max(id) FROM nodes", ()).fetchone()[0] or 0)

    def window(self, pivot: int) -> list[Any]:
        """Up to ``WINDOW`` free nodes from id ``pivot`` on, wrapping."""
        written = _SQLITE_WINDOW if self.db.sqlite else _POSTGRESQL_WINDOW
        rows = self.db.execute(WINDOW_QUERY.format(op=">=", **written),
                               (self.rc, False, pivot, WINDOW)).fetchall()
        if len(rows) < WINDOW:
            rows += self.db.execute(
                WINDOW_QUERY.format(op="<", **written),
                (self.rc, False, pivot, WINDOW - len(rows))).fetchall()
        return list(rows)

    def create(self, allocation_uuid: str) -> bool:
        """Store an allocation and give it a free node; False when none."""
        db = self.db
        with db.transaction():
            allocation_id = db.execute(
                INSERT, (allocation_uuid, self.rc, db.now())).fetchone()[0]
        for node_id, _name, _uuid in self.window(
                random.randint(1, max(1, self.highest))):
            now = db.now()
            with db.transaction():
                taken = db.execute(TAKE_NODE, (
                    allocation_id, allocation_uuid, '{"traits": []}', now,
                    node_id, False, self.rc)).rowcount == 1
                if taken:
                    db.execute(ACTIVATE, (node_id, now, allocation_id))
            if taken:
                return True
        return False

    def create_one(self, allocation_uuid: str) -> None:
        """:meth:`create`, which must find a free node."""
        if not self.create(allocation_uuid):
            raise RuntimeError("SQL floor: no free node left")

    def get(self, allocation_uuid: str) -> Any:
        return self.db.execute(GET, (allocation_uuid,)).fetchone()

    def list(self, limit: int) -> list[Any]:
        return list(self.db.execute(LIST, (limit,)).fetchall())


def cpu_ms(operation: Callable[[int], object], count: int) -> float:
    """CPU milliseconds of this thread per call of ``operation(i)``."""
    start = time.thread_time()
    for index in range(count):
        operation(index)
    return (time.thread_time() - start) * 1000.0 / count
