"""Statements on the driver's cursor (``db/driver_statements.py``) give
what SQLAlchemy's execution of the same statement gives, on SQLite,
PostgreSQL and MariaDB, and fail as SQLAlchemy fails.

A poll, a page of a list and a reservation's statements no longer go
through SQLAlchemy's execution; these tests hold their rows to
SQLAlchemy's for the same statement (every shape of page: filters, sort
keys and directions, markers with and without a sort value), their
timestamps to the text Ironic shows for the stored value (whole
seconds, trailing zeros), and a failing statement to SQLAlchemy's
exception: outside a transaction and inside one (which is rolled back),
and for a connection lost inside one (invalidated, and "unavailable" to
the callers' checks).
"""

from __future__ import annotations

import datetime
import itertools
import time
import uuid
from typing import Any, ClassVar

import testtools
from sqlalchemy import (
    bindparam,
    column,
    event,
    insert,
    literal_column,
    select,
    table,
    text,
    update,
)
from sqlalchemy.exc import DBAPIError, IntegrityError

from baremetal_allocclient.server.allocation import reservation, views
from baremetal_allocclient.server.allocation.service import records
from baremetal_allocclient.server.db import lookups, paging
from baremetal_allocclient.server.db.allocation_row import AllocationRow
from baremetal_allocclient.server.db.driver_statements import DriverStatement
from baremetal_allocclient.server.db.engine import (
    CommitOutcomeUnknown,
    Database,
    is_unavailable,
)
from baremetal_allocclient.server.db.models import Allocation, Node
from baremetal_allocclient.server.domain.paging import Page
from baremetal_allocclient.server.domain.principal import NOAUTH_ADMIN
from baremetal_allocclient.tests.fixtures import databases

#: A whole second (Ironic shows no fraction) and a fraction with
#: trailing zeros (shown with all six digits).
WHOLE = datetime.datetime(2026, 1, 2, 3, 4, 5)
ZEROS = datetime.datetime(2026, 1, 2, 3, 4, 6, 120000)


class _DriverStatements(databases.MigratedPerClass):
    """Mixin; ``kind`` names the database."""

    uuids: ClassVar[list[str]]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.uuids = _stored(cls.db)

    def sqlalchemy_statements(self) -> list[str]:
        """The statements SQLAlchemy executes from now on (its
        ``before_cursor_execute`` event)."""
        sent: list[str] = []

        def _sent(_conn: Any, _cursor: Any, statement: str,
                  *_args: Any) -> None:
            sent.append(statement)

        event.listen(self.db.engine, "before_cursor_execute", _sent)
        self.addCleanup(  # type: ignore[attr-defined]
            event.remove, self.db.engine, "before_cursor_execute", _sent)
        return sent

    def test_a_poll_reads_the_row_sqlalchemy_reads(self) -> None:
        test: Any = self
        for ident, by_uuid in itertools.chain(
                ((u, True) for u in self.uuids),
                (("driver-reads-0", False), ("none-such", False))):
            statement = lookups._allocation_with_node_uuid(by_uuid)
            with self.db.read_connection() as conn:
                expected = conn.execute(statement, {"ident": ident}).first()
            with self.db.statement_connection() as conn:
                through_sqlalchemy = self.sqlalchemy_statements()
                row = lookups.allocation_for_reading(conn, ident, by_uuid)
            test.assertEqual([], through_sqlalchemy)
            if expected is None:
                test.assertIsNone(row)
                continue
            test.assertEqual(expected._asdict(), row._asdict())

    def test_every_shape_of_page_reads_the_rows_sqlalchemy_reads(
            self) -> None:
        test: Any = self
        with self.db.read() as session:
            holder = session.scalars(select(Node)).one()
            rows = session.scalars(select(Allocation)).all()
            markers = [None, rows[1], rows[-1]]  # sort values set, or NULL
        filters: list[dict[str, Any]] = [
            {}, {"state": "active"}, {"resource_class": "rc-b"},
            {"owner": "project-a", "state": "allocating"},
            {"node_id": holder.id}]
        for sort_key, sort_dir, marker, where in itertools.product(
                views.ALLOCATION_SORT_KEYS, ("asc", "desc"), markers,
                filters):
            page = Page(limit=3, sort_key=sort_key,
                                sort_dir=sort_dir)
            through_sqlalchemy = self.sqlalchemy_statements()
            got = records.list_page(self.db, NOAUTH_ADMIN, records.Listing(
                page=page, owner=where.get("owner"),
                state=where.get("state"),
                resource_class=where.get("resource_class"),
                node=None if "node_id" not in where else holder.uuid,
                marker=None if marker is None else marker.uuid))
            # The node filter and the marker are looked up by the ORM;
            # the page itself (ordered) is read by the driver statement.
            test.assertEqual([], [statement for statement in
                                  through_sqlalchemy
                                  if "ORDER BY" in statement])
            test.assertEqual(self.page(page, marker, where), got,
                             (sort_key, sort_dir, marker, where))

    def page(self, page: Page, marker: Allocation | None,
             where: dict[str, Any]) -> list[tuple[Any, ...]]:
        """The page as SQLAlchemy's execution reads it, values bound."""
        query = lookups.allocation_rows()
        for name, value in where.items():
            query = query.where(getattr(Allocation, name) == value)
        column = getattr(Allocation, page.sort_key)
        query = paging.order_and_page(
            query, page, column, Allocation.id,
            None if marker is None
            else (getattr(marker, page.sort_key), marker.id))
        with self.db.read_connection() as conn:
            return [tuple(row) for row in conn.execute(query)]

    def test_timestamps_are_shown_as_ironic_shows_the_stored_value(
            self) -> None:
        test: Any = self
        with self.db.read() as session:
            stored = {a.uuid: (a.created_at, a.updated_at)
                      for a in session.scalars(select(Allocation))}
        for ident in self.uuids:
            with self.db.statement_connection() as conn:
                row = lookups.allocation_for_reading(conn, ident, True)
            for shown, value in zip((row.created_at, row.updated_at),
                                    stored[ident], strict=True):
                expected = "null" if value is None else (
                    f'"{value.isoformat()}+00:00"')
                test.assertEqual(expected, views._time(shown))
        created = {stored[u][0] for u in self.uuids}
        test.assertIn(WHOLE, created)  # every database keeps whole seconds

    def test_a_failing_statement_raises_what_sqlalchemy_raises(
            self) -> None:
        test: Any = self
        broken = DriverStatement(
            select(literal_column("1")).select_from(table("no_such_table")),
            self.db.engine.dialect)
        with self.db.statement_connection() as conn:
            with test.assertRaises(DBAPIError) as raised:
                broken.rows(conn, {})
            test.assertFalse(raised.exception.connection_invalidated)
        with self.db.statement_connection() as conn:  # still usable
            test.assertIsNotNone(
                lookups.allocation_for_reading(conn, self.uuids[0], True))

    def test_a_failing_write_outside_a_transaction_is_not_run_twice(
            self) -> None:
        """Only a SELECT is run again by SQLAlchemy (a BEGIN IMMEDIATE
        refused after the busy timeout must not wait a second time)."""
        test: Any = self
        broken = DriverStatement(
            update(table("no_such_table", column("x"))).values(x=1),
            self.db.engine.dialect)
        with self.db.statement_connection() as conn:
            through_sqlalchemy = self.sqlalchemy_statements()
            with test.assertRaises(DBAPIError) as raised:
                broken.rowcount(conn, {})
        test.assertEqual([], through_sqlalchemy)
        test.assertFalse(raised.exception.connection_invalidated)

    def test_a_failing_statement_in_a_transaction_rolls_it_back(
            self) -> None:
        """In SQLAlchemy's transaction and in the driver's
        (``write_connection``, whose connection goes back to the pool
        usable)."""
        test: Any = self
        rename = DriverStatement(
            update(Allocation).where(Allocation.uuid == bindparam("u"))
            .values(name=bindparam("n")), self.db.engine.dialect)
        broken = DriverStatement(
            update(table("no_such_table", column("x"))).values(x=1),
            self.db.engine.dialect)
        in_list = DriverStatement(  # expanded for each run
            update(Allocation).where(Allocation.uuid.in_(
                bindparam("us", expanding=True))).values(name=None),
            self.db.engine.dialect)
        for transaction in (self.db.read_connection, self.db.write_connection):
            with test.assertRaises(DBAPIError) as raised, \
                    transaction() as conn:
                test.assertEqual(1, rename.rowcount(
                    conn, {"u": self.uuids[1], "n": "renamed"}))
                test.assertEqual(2, in_list.rowcount(
                    conn, {"us": self.uuids[3:5]}))
                test.assertEqual(0, in_list.rowcount(conn, {"us": []}))
                broken.rowcount(conn, {})
            test.assertFalse(raised.exception.connection_invalidated)
            test.assertFalse(is_unavailable(raised.exception))
            with self.db.statement_connection() as conn:
                row = lookups.allocation_for_reading(conn, self.uuids[1],
                                                     True)
            test.assertIsNone(row.name)
        with self.db.write_connection() as conn:
            test.assertEqual(1, rename.rowcount(
                conn, {"u": self.uuids[1], "n": "renamed"}))
        with self.db.statement_connection() as conn:
            row = lookups.allocation_for_reading(conn, self.uuids[1], True)
        test.assertEqual("renamed", row.name)

    def test_a_connection_lost_in_a_transaction_is_unavailable(
            self) -> None:
        test: Any = self
        if self.kind == "sqlite":
            test.skipTest("an SQLite connection cannot be lost")
        rename = DriverStatement(
            update(Allocation).where(Allocation.uuid == bindparam("u"))
            .values(name=bindparam("n")), self.db.engine.dialect)
        with test.assertRaises(DBAPIError) as raised, \
                self.db.write_connection() as conn:
            killed = self.kill_backend_of(conn)
            rename.rowcount(conn, {"u": self.uuids[2], "n": "lost"})
        test.assertTrue(raised.exception.connection_invalidated)
        test.assertTrue(is_unavailable(raised.exception))
        # The statement's own error (the connection invalidated at once),
        # not the rollback's that follows on a lost connection.
        test.assertIn("UPDATE allocations", str(raised.exception))
        with self.db.statement_connection() as conn:  # a new connection
            row = lookups.allocation_for_reading(conn, self.uuids[2], True)
            test.assertNotEqual(killed, self.backend().first(conn, {}).id)
        test.assertNotEqual("lost", row.name)

    def test_a_connection_lost_while_committing_is_an_unknown_outcome(
            self) -> None:
        """The driver's transaction (``write_connection``): the commit's
        failure is reported as a commit whose outcome is unknown, and
        the next block gets a new connection."""
        test: Any = self
        if self.kind == "sqlite":
            test.skipTest("an SQLite connection cannot be lost")
        with test.assertRaises(CommitOutcomeUnknown), \
                self.db.write_connection() as conn:
            killed = self.kill_backend_of(conn)
        with self.db.statement_connection() as conn:
            test.assertNotEqual(killed, self.backend().first(conn, {}).id)

    def backend(self) -> DriverStatement:
        """The database's id of the connection it runs on."""
        return DriverStatement(
            select(literal_column(_BACKEND_ID[self.kind]).label("id")),
            self.db.engine.dialect)

    def kill_backend_of(self, conn: Any) -> int:
        """End ``conn``'s session from another connection, as a database
        restart or a network cut would; its id."""
        killed = int(self.backend().first(conn, {}).id)
        with self.db.engine.connect() as other:
            other.execute(text(_KILL[self.kind].format(killed)))
            other.commit()
        time.sleep(0.2)  # the server closes its end
        return killed

    def test_an_insert_stores_what_sqlalchemy_stores(self) -> None:
        """Of an ORM object, and of the plain record a create builds."""
        test: Any = self
        made = {}
        for how in ("sqlalchemy", "driver", "record"):
            values: dict[str, Any] = {
                "uuid": str(uuid.uuid4()), "name": f"inserted-{how}",
                "state": "allocating", "resource_class": "rc-a",
                "traits": ["CUSTOM_X"], "candidate_nodes": [],
                "conductor_affinity": "driver-reads",
                "created_at": ZEROS}  # extra left to its default
            allocation = (AllocationRow(**values) if how == "record"
                          else Allocation(**values))
            transaction = (self.db.engine.begin if how == "sqlalchemy"
                           else self.db.write_connection)
            with transaction() as conn:
                if how != "sqlalchemy":
                    reservation.insert_allocation(conn, allocation)
                    made[how] = allocation.id
                    continue
                given = {column.key: value for column in
                         Allocation.__table__.columns
                         if (value := getattr(allocation, column.key))
                         is not None}
                made[how] = conn.execute(
                    insert(Allocation), given).inserted_primary_key[0]
        with self.db.read_connection() as conn:
            rows = {how: conn.execute(
                select(*Allocation.__table__.columns,
                       Allocation.constraints.is_(None).label("sql_null"))
                .where(Allocation.id == made_id)).one()._asdict()
                for how, made_id in made.items()}
        for row in rows.values():
            del row["id"], row["uuid"], row["name"]
        test.assertEqual(rows["sqlalchemy"], rows["driver"])
        test.assertEqual(rows["sqlalchemy"], rows["record"])
        # Unset: the column's default, and SQL NULL (not JSON null).
        test.assertEqual(({}, True), (rows["driver"]["extra"],
                                      rows["driver"]["sql_null"]))
        with test.assertRaises(IntegrityError), \
                self.db.write_connection() as conn:
            reservation.insert_allocation(conn, Allocation(
                uuid=str(uuid.uuid4()), name="inserted-driver",
                state="allocating", resource_class="rc-a",
                created_at=ZEROS))


_BACKEND_ID = {"postgresql": "pg_backend_pid()", "mysql": "CONNECTION_ID()"}
_KILL = {"postgresql": "SELECT pg_terminate_backend({})", "mysql": "KILL {}"}


def _stored(db: Database) -> list[str]:
    """A node and allocations covering the columns a read converts
    (a queue deadline, constraints, a node) and the timestamps a view
    writes; their UUIDs."""
    uuids = [str(uuid.uuid4()) for _ in range(6)]
    with db.write() as session:
        node = Node(uuid=str(uuid.uuid4()), name="driver-reads-node",
                    driver="fake-hardware", resource_class="rc-a",
                    provision_state="active", power_state="power on")
        session.add(node)
        session.flush()
        for index, ident in enumerate(uuids):
            session.add(Allocation(
                uuid=ident, name=f"driver-reads-{index}" if index % 2 == 0
                else None,
                state=("active", "allocating", "error")[index % 3],
                node_id=node.id if index == 0 else None,
                resource_class=("rc-a", "rc-b")[index % 2],
                traits=["CUSTOM_X"] if index == 1 else [],
                candidate_nodes=[], extra={"i": index},
                owner="project-a" if index < 3 else None,
                last_error="no node" if index == 2 else None,
                constraints={"node_owner": "project-a"} if index == 3
                else None,
                conductor_affinity="driver-reads",
                queue_deadline=ZEROS if index == 4 else None,
                created_at=(WHOLE, ZEROS)[index % 2]
                + datetime.timedelta(minutes=index // 2),
                updated_at=None if index == 5 else WHOLE,
            ))
    return uuids


class SQLiteDriverStatements(_DriverStatements, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLDriverStatements(_DriverStatements, testtools.TestCase):
    kind = "postgresql"


class MariaDBDriverStatements(_DriverStatements, testtools.TestCase):
    kind = "mysql"
