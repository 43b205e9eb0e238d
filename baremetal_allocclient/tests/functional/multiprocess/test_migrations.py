"""Migrations and the per-database code paths on each database.

The schema must come out identical to the models on SQLite, PostgreSQL
and MariaDB (utf8mb4, every text column exact: binary and NO PAD), and
the dialect-specific pieces (the database clock, the take-over
compare-and-set, row locks) must work on each.
"""

from __future__ import annotations

import datetime
import time
import uuid
from typing import Any

import testtools
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import (
    JSON,
    column,
    insert,
    inspect,
    select,
    table,
    update,
)
from sqlalchemy.engine import make_url

from baremetal_allocclient.server.allocation import conductors
from baremetal_allocclient.server.db import node_properties
from baremetal_allocclient.server.db.engine import MIGRATIONS, Database
from baremetal_allocclient.server.db.models import (
    Allocation,
    Base,
    Conductor,
    Node,
    NodeProperty,
    NodeTrait,
    utcnow,
)
from baremetal_allocclient.tests.fixtures import databases


class _MigrationTests(databases.ScratchPerClass):
    """Mixin; ``kind`` is set by the concrete classes."""

    @classmethod
    def url(cls) -> str:
        """The URL the server is given for the scratch database."""
        return cls.scratch.url

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        case: Any = self
        self.db = Database(self.url())
        case.addCleanup(self.db.dispose)
        self.db.upgrade()

    def test_schema_matches_models_and_upgrade_is_idempotent(self) -> None:
        case: Any = self
        self.db.upgrade()
        current, head = self.db.schema_revisions()
        case.assertEqual(head, current)
        case.assertEqual("0017_allocation_changes", head)
        with self.db.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn),
                                    Base.metadata)
        case.assertEqual([], diff)

    def test_four_byte_characters_are_stored(self) -> None:
        case: Any = self
        text = "\U0001f600 caf\u00e9"
        node_uuid = str(uuid.uuid4())
        with self.db.write() as session:
            session.add(Node(
                uuid=node_uuid, name="n-" + uuid.uuid4().hex[:8],
                driver="fake-hardware", provision_state="enroll",
                description=text, maintenance_reason=text,
                extra={"note": text}, created_at=utcnow(),
            ))
        with self.db.read() as session:
            row = session.execute(
                select(Node.description, Node.maintenance_reason, Node.extra)
                .where(Node.uuid == node_uuid)
            ).one()
        case.assertEqual((text, text, {"note": text}), tuple(row))

    def test_database_clock_is_utc(self) -> None:
        case: Any = self
        with self.db.read() as session:
            now = conductors.database_now(session)
        case.assertIsNone(now.tzinfo)
        case.assertLess(abs((now - utcnow()).total_seconds()), 60)
        conductors.register(self.db, "clock-" + uuid.uuid4().hex[:6],
                            datetime.timedelta(seconds=60))
        rows, later = conductors.conductors_and_now(self.db)
        for row in rows:
            case.assertLessEqual(row.heartbeat_at,
                                 later + datetime.timedelta(seconds=1))

    def test_heartbeat_keeps_sub_second_precision(self) -> None:
        case: Any = self
        name = "precise-" + uuid.uuid4().hex[:6]
        conductors.register(self.db, name, datetime.timedelta(seconds=60))
        beat = datetime.datetime(2026, 1, 2, 3, 4, 5, 123456)
        with self.db.write() as session:
            session.execute(update(Conductor)
                            .where(Conductor.hostname == name)
                            .values(heartbeat_at=beat))
        with self.db.read() as session:
            case.assertEqual(beat, session.scalar(
                select(Conductor.heartbeat_at)
                .where(Conductor.hostname == name)))

    def test_take_over_compare_and_set(self) -> None:
        case: Any = self
        dead = "dead-" + uuid.uuid4().hex[:6]
        with self.db.write() as session:
            row = Allocation(
                uuid=str(uuid.uuid4()), state="allocating",
                resource_class="rc", traits=[], candidate_nodes=[],
                extra={}, conductor_affinity=dead, created_at=utcnow(),
            )
            session.add(row)
            session.flush()
            allocation_id, allocation_uuid = row.id, row.uuid
        case.assertTrue(conductors.take_over(
            self.db, allocation_id, allocation_uuid, dead, "winner"))
        case.assertFalse(conductors.take_over(
            self.db, allocation_id, allocation_uuid, dead, "loser"))
        with self.db.read() as session:
            case.assertEqual("winner", session.scalar(
                select(Allocation.conductor_affinity)
                .where(Allocation.id == allocation_id)))

    def test_sessions_bound_lock_waits_and_idle_transactions(self) -> None:
        """No request or worker waits long behind a row lock, and a
        frozen process's open transaction is ended by the server."""
        case: Any = self
        if self.db.is_sqlite:
            case.skipTest("SQLite: one writer at a time, busy_timeout")
        if self.db.engine.dialect.name == "postgresql":
            queries = ("SHOW lock_timeout",
                       "SHOW idle_in_transaction_session_timeout")
            expected = ["5s", "30s"]
        else:
            queries = ("SELECT @@innodb_lock_wait_timeout",
                       "SELECT @@idle_transaction_timeout")
            expected = ["5", "30"]
        with self.db.read() as session:
            found = [str(session.connection().exec_driver_sql(q).scalar())
                     for q in queries]
        case.assertEqual(expected, found)

    def test_take_over_skips_a_row_locked_by_a_stalled_holder(self) -> None:
        """A frozen process holding one allocation's row lock does not
        hold up the take-over of the others (issue 13, item 6)."""
        case: Any = self
        if self.db.is_sqlite:
            case.skipTest("SQLite has no row locks: one writer at a time")
        dead = "dead-" + uuid.uuid4().hex[:6]
        rows = []
        with self.db.write() as session:
            for _ in range(2):
                row = Allocation(
                    uuid=str(uuid.uuid4()), state="allocating",
                    resource_class="rc", traits=[], candidate_nodes=[],
                    extra={}, conductor_affinity=dead, created_at=utcnow(),
                )
                session.add(row)
                session.flush()
                rows.append((row.id, row.uuid))
        (stuck_id, stuck_uuid), (free_id, free_uuid) = rows
        with self.db.write() as holder:  # the stalled former owner
            holder.scalar(select(Allocation.id)
                          .where(Allocation.id == stuck_id)
                          .with_for_update())
            started = time.monotonic()
            case.assertFalse(conductors.take_over(
                self.db, stuck_id, stuck_uuid, dead, "me"))
            case.assertTrue(conductors.take_over(
                self.db, free_id, free_uuid, dead, "me"))
            case.assertLess(time.monotonic() - started, 2.0)
        # Once the holder is gone, the next round takes the row.
        case.assertTrue(conductors.take_over(
            self.db, stuck_id, stuck_uuid, dead, "me"))


    def test_0007_normalizes_existing_properties_and_downgrades(
            self) -> None:
        """Nodes enrolled before 0004 get their node_properties rows; the
        migration also goes back down."""
        case: Any = self
        with self.db.engine.begin() as conn:
            command.downgrade(self.db._alembic_config(conn),
                              "0006_ports")
        case.assertEqual("0006_ports",
                         self.db.schema_revisions()[0])
        node_uuid = str(uuid.uuid4())
        # The 0006 columns only: the model's later columns (and their
        # Python-side defaults) do not exist at that revision.
        old_nodes = table(
            "nodes", column("uuid"), column("driver"),
            column("provision_state"), column("created_at"),
            column("properties", JSON), column("maintenance"),
            column("protected"), column("retired"),
            column("conductor_group"), column("instance_info", JSON),
            column("extra", JSON), column("driver_info", JSON),
            column("driver_internal_info", JSON),
            column("network_data", JSON))
        with self.db.engine.begin() as conn:
            conn.execute(insert(old_nodes).values(
                uuid=node_uuid, driver="fake-hardware",
                provision_state="available", created_at=utcnow(),
                properties={"cpus": "8", "cpu_arch": "x86_64"},
                maintenance=False, protected=False, retired=False,
                conductor_group="", instance_info={}, extra={},
                driver_info={}, driver_internal_info={}, network_data={}))
        self.db.upgrade()
        with self.db.read() as session:
            rows = session.execute(
                select(NodeProperty.key, NodeProperty.text,
                       NodeProperty.number)
                .join(Node, Node.id == NodeProperty.node_id)
                .where(Node.uuid == node_uuid)
                .order_by(NodeProperty.key)).all()
        case.assertEqual([("cpu_arch", "x86_64", None), ("cpus", "8", 8.0)],
                         [tuple(row) for row in rows])

    def test_0013_keeps_last_error_and_downgrades(self) -> None:
        """Allocations failed before 0013 keep their ``last_error`` and
        have no ``funnel_error``; the migration also goes back down."""
        case: Any = self
        with self.db.engine.begin() as conn:
            command.downgrade(self.db._alembic_config(conn),
                              "0012_exact_collation")
        old = table("allocations", column("uuid"), column("state"),
                    column("last_error"), column("resource_class"),
                    column("traits", JSON), column("candidate_nodes", JSON),
                    column("extra", JSON), column("created_at"))
        failed = str(uuid.uuid4())
        with self.db.engine.begin() as conn:
            conn.execute(insert(old).values(
                uuid=failed, state="error", last_error="why; funnel: x",
                resource_class="rc", traits=[], candidate_nodes=[],
                extra={}, created_at=utcnow()))
        self.db.upgrade()
        with self.db.read() as session:
            row = session.execute(
                select(Allocation.last_error, Allocation.funnel_error)
                .where(Allocation.uuid == failed)).one()
        case.assertEqual(("why; funnel: x", None), tuple(row))


    def test_0016_moves_groups_and_leases_out_of_extra_and_back(
            self) -> None:
        """Rows written the old way (the group and the lease as keys of
        ``extra``) keep every group and lease, in their own fields, and
        ``extra`` keeps only the user's keys; a value that cannot be a
        field stays in ``extra`` as it was; the downgrade puts them back
        as they were written."""
        case: Any = self
        with self.db.engine.begin() as conn:
            command.downgrade(self.db._alembic_config(conn),
                              "0015_chassis")
        old = table("allocations", column("uuid"), column("state"),
                    column("resource_class"), column("traits", JSON),
                    column("candidate_nodes", JSON), column("extra", JSON),
                    column("created_at"))
        written = {
            "member": {"job": "a", "baremetal_alloc_group": "g",
                       "baremetal_alloc_group_size": 2},
            "leased": {"baremetal_alloc:lease_expires_at":
                       "2030-01-02T03:04:05Z",
                       "baremetal_alloc:lease": "2h", "job": "b"},
            "both": {"baremetal_alloc_group": "g",
                     "baremetal_alloc_group_size": 2,
                     "baremetal_alloc:lease_expires_at":
                     "2030-01-02T03:04:05+01:00",
                     "baremetal_alloc:lease": "1h"},
            "odd": {"baremetal_alloc_group": "h",
                    "baremetal_alloc_group_size": "two",
                    "baremetal_alloc:lease_expires_at": "soon"},
            "plain": {"job": "c"},
        }
        uuids = {name: str(uuid.uuid4()) for name in written}
        with self.db.engine.begin() as conn:
            for name, extra in written.items():
                conn.execute(insert(old).values(
                    uuid=uuids[name], state="active", resource_class="rc",
                    traits=[], candidate_nodes=[], extra=extra,
                    created_at=utcnow()))
        self.db.upgrade()
        with self.db.read() as session:
            rows = {row.uuid: row for row in session.execute(select(
                Allocation.uuid, Allocation.extra, Allocation.group_name,
                Allocation.group_size, Allocation.lease_expires_at,
                Allocation.lease_duration))}
        moved = {name: tuple(rows[uuids[name]])[1:]
                 for name in written}
        end = datetime.datetime(2030, 1, 2, 3, 4, 5)
        case.assertEqual({
            "member": ({"job": "a"}, "g", 2, None, None),
            "leased": ({"job": "b"}, None, None, end, "2h"),
            "both": ({}, "g", 2, end - datetime.timedelta(hours=1), "1h"),
            "odd": ({"baremetal_alloc_group_size": "two",
                     "baremetal_alloc:lease_expires_at": "soon"},
                    "h", None, None, None),
            "plain": ({"job": "c"}, None, None, None, None),
        }, moved)
        with self.db.engine.begin() as conn:
            command.downgrade(self.db._alembic_config(conn),
                              "0015_chassis")
        with self.db.engine.connect() as conn:
            back = dict(conn.execute(select(old.c.uuid, old.c.extra)).all())
        written["both"]["baremetal_alloc:lease_expires_at"] = (
            "2030-01-02T02:04:05Z")
        odd = dict(written["odd"])
        written["odd"] = {"baremetal_alloc_group": "h", **odd}
        case.assertEqual({uuids[name]: extra
                          for name, extra in written.items()},
                         {uuids[name]: back[uuids[name]]
                          for name in written})
        self.db.upgrade()

    def _selection_index(self) -> list[str]:
        with self.db.engine.connect() as conn:
            indexes = inspect(conn).get_indexes("nodes")
        return next(list(index["column_names"]) for index in indexes
                    if index["name"] == "nodes_selection_idx")

    def test_0014_selection_index_ends_with_id_and_downgrades(self) -> None:
        """The selection index ends with the node's id after 0014 and
        without it before; nodes are kept both ways."""
        case: Any = self
        fixed = ["resource_class", "provision_state", "maintenance"]
        case.assertEqual([*fixed, "id"], self._selection_index())
        node_uuid = str(uuid.uuid4())
        with self.db.write() as session:
            session.add(Node(uuid=node_uuid, driver="fake-hardware",
                             provision_state="available",
                             resource_class="rc", created_at=utcnow()))
        with self.db.engine.begin() as conn:
            command.downgrade(self.db._alembic_config(conn),
                              "0013_allocation_funnel_error")
        case.assertEqual(fixed, self._selection_index())
        self.db.upgrade()
        case.assertEqual([*fixed, "id"], self._selection_index())
        with self.db.read() as session:
            case.assertEqual([node_uuid], list(session.scalars(
                select(Node.uuid).where(Node.uuid == node_uuid))))

    def test_text_compares_exactly(self) -> None:
        """Names differing in case or a trailing space are two nodes, and
        an equality matches one of them (issue 20)."""
        case: Any = self
        names = ["Exact-" + uuid.uuid4().hex[:6]]
        names += [names[0].lower(), names[0].lower() + " "]
        with self.db.write() as session:
            for name in names:
                session.add(Node(uuid=str(uuid.uuid4()), name=name,
                                 driver="fake-hardware",
                                 provision_state="enroll",
                                 created_at=utcnow()))
        with self.db.read() as session:
            for name in names:
                case.assertEqual([name], list(session.scalars(
                    select(Node.name).where(Node.name == name))))

    def _collations(self, db: Database) -> dict[tuple[str, str], str]:
        """(table, column) -> collation of every text column but alembic's
        own and the JSON documents, which SQL never compares (MariaDB
        gives JSON ``utf8mb4_bin`` on create; 0012 converts them too)."""
        documents = {(table.name, col.name)
                     for table in Base.metadata.tables.values()
                     for col in table.columns if isinstance(col.type, JSON)}
        with db.engine.connect() as conn:
            rows = conn.exec_driver_sql(
                "SELECT TABLE_NAME, COLUMN_NAME, COLLATION_NAME FROM "
                "information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
                "AND COLLATION_NAME IS NOT NULL "
                "AND TABLE_NAME <> 'alembic_version'").all()
        return {(table, name): collation for table, name, collation in rows
                if (table, name) not in documents}

    def _table_collations(self, db: Database) -> set[str]:
        with db.engine.connect() as conn:
            return set(conn.exec_driver_sql(
                "SELECT TABLE_COLLATION FROM information_schema.TABLES "
                "WHERE TABLE_SCHEMA = DATABASE() "
                "AND TABLE_NAME <> 'alembic_version'").scalars())

    def _skip_unless_mysql_family(self) -> None:
        if self.db.engine.dialect.name not in ("mysql", "mariadb"):
            case: Any = self
            case.skipTest("text compares exactly on SQLite and PostgreSQL")

    def test_every_text_column_and_table_is_binary_no_pad(self) -> None:
        """Also the tables' default, so columns a later migration adds
        are exact too; ``create_all`` gives the columns the same."""
        self._skip_unless_mysql_family()
        case: Any = self
        migrated = self._collations(self.db)
        case.assertIn(("node_properties", "key"), migrated)
        case.assertEqual({"utf8mb4_nopad_bin"}, set(migrated.values()))
        case.assertEqual({"utf8mb4_nopad_bin"},
                         self._table_collations(self.db))
        scratch = databases.scratch(case.addCleanup, "mysql")
        other = Database(self.url().replace(self.scratch.name, scratch.name))
        case.addCleanup(other.dispose)
        Base.metadata.create_all(other.engine)
        case.assertEqual(migrated, self._collations(other))

    def test_0012_converts_an_existing_database_and_keeps_rows(
            self) -> None:
        """A database made at 0011 (the database's default collation)
        gets the exact collation and keeps every row; the downgrade
        restores the old collations."""
        self._skip_unless_mysql_family()
        case: Any = self
        with self.db.engine.begin() as conn:
            command.downgrade(self.db._alembic_config(conn),
                              "0011_node_boot_console")
        case.assertEqual({"utf8mb4_general_ci"},
                         self._table_collations(self.db))
        before = self._filled_0011()
        case.assertEqual({"ports", "node_vifs"},
                         {name for name, rows in before.items() if not rows})
        case.assertEqual({"utf8mb4_general_ci"},
                         set(self._collations(self.db).values())
                         - {"utf8mb4_bin"})
        with self.db.engine.begin() as conn:
            command.upgrade(self.db._alembic_config(conn),
                            "0012_exact_collation")
        case.assertEqual("0012_exact_collation",
                         self.db.schema_revisions()[0])
        case.assertEqual({"utf8mb4_nopad_bin"},
                         set(self._collations(self.db).values()))
        case.assertEqual(before, self._all_rows())
        with self.db.engine.begin() as conn:
            command.downgrade(self.db._alembic_config(conn),
                              "0011_node_boot_console")
        old = self._collations(self.db)
        case.assertEqual("utf8mb4_bin", old.pop(("node_properties", "key")))
        case.assertEqual("utf8mb4_bin", old.pop(("node_properties", "text")))
        case.assertEqual({"utf8mb4_general_ci"}, set(old.values()))
        case.assertEqual(before, self._all_rows())
        self.db.upgrade()

    def _filled_0011(self) -> dict[str, list[tuple[Any, ...]]]:
        """Rows in every table (0011's columns), as the
        old collation stored them."""
        with self.db.write() as session:
            # A Core insert: only the given columns and those with
            # defaults, all of 0011 (the model has 0015's chassis_uuid);
            # the property rows the ORM's events would write, by hand.
            properties = {"cpu_arch": "x86_64 "}
            node_id = session.execute(Node.__table__.insert().values(
                uuid=str(uuid.uuid4()), name="Node-Old",
                driver="fake-hardware", provision_state="available",
                owner="Team-A", lessee="team-b ", resource_class="RC1",
                properties=properties, created_at=utcnow(),
            )).inserted_primary_key[0]
            session.execute(insert(NodeProperty),
                            node_properties.rows_for(node_id, properties))
            session.add(NodeTrait(node_id=node_id, trait="CUSTOM_A"))
            # 0011's allocation columns (the model has 0013's too).
            old = table("allocations", column("uuid"), column("name"),
                        column("state"), column("resource_class"),
                        column("owner"), column("node_id"),
                        column("traits", JSON),
                        column("candidate_nodes", JSON),
                        column("extra", JSON), column("created_at"))
            session.execute(insert(old).values(
                uuid=str(uuid.uuid4()), name="Alloc-Old", state="active",
                resource_class="RC1", owner="Team-A", node_id=node_id,
                traits=["CUSTOM_A"], candidate_nodes=[], extra={"k": "v"},
                created_at=utcnow()))
        conductors.register(self.db, "Conductor-Old",
                            datetime.timedelta(seconds=60))
        return self._all_rows()

    def _all_rows(self) -> dict[str, list[tuple[Any, ...]]]:
        tables = ("nodes", "node_traits", "node_properties", "allocations",
                  "conductors", "ports", "node_vifs")
        found = {}
        with self.db.engine.connect() as conn:
            for name in tables:
                rows = conn.exec_driver_sql(f"SELECT * FROM {name}")
                found[name] = sorted((tuple(row) for row in rows), key=repr)
        return found


class SQLiteMigrationTests(_MigrationTests, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLMigrationTests(_MigrationTests, testtools.TestCase):
    kind = "postgresql"


class MySQLMigrationTests(_MigrationTests, testtools.TestCase):
    kind = "mysql"


def _as_mariadb(url: str) -> str:
    return make_url(url).set(drivername="mariadb+pymysql").render_as_string(
        hide_password=False)


class MariaDBUrlMigrationTests(_MigrationTests, testtools.TestCase):
    """The same database through a ``mariadb+pymysql://`` URL, whose
    dialect is named "mariadb", not "mysql"."""

    kind = "mysql"

    @classmethod
    def url(cls) -> str:
        return _as_mariadb(cls.scratch.url)

    def test_upgrade_widens_a_whole_second_heartbeat(self) -> None:
        """A schema made through such a URL before the fix had DATETIME
        (whole seconds) for the heartbeat; the upgrade widens it."""
        scratch = databases.scratch(self.addCleanup, "mysql")
        db = Database(_as_mariadb(scratch.url))
        self.addCleanup(db.dispose)
        with db.engine.begin() as conn:
            cfg = Config()
            cfg.set_main_option("script_location", MIGRATIONS)
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "0002_conductors")
            conn.exec_driver_sql(
                "ALTER TABLE conductors MODIFY heartbeat_at DATETIME "
                "NOT NULL")  # as the unfixed 0002 made it
        self.assertEqual(0, self._precision(db))
        db.upgrade()
        self.assertEqual(6, self._precision(db))

    @staticmethod
    def _precision(db: Database) -> int:
        with db.engine.connect() as conn:
            return int(conn.exec_driver_sql(
                "SELECT DATETIME_PRECISION FROM information_schema.COLUMNS "
                "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = "
                "'conductors' AND COLUMN_NAME = 'heartbeat_at'"
            ).scalar_one())
