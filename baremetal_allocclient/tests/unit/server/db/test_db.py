"""Schema migrations and the compare-and-set reservation, on SQLite."""

from __future__ import annotations

import json

import testtools
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import insert, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.schema import CreateTable

from baremetal_allocclient.server.allocation import (
    matching,
    reservation,
    selection,
)
from baremetal_allocclient.server.allocation.release import freeing
from baremetal_allocclient.server.db import lookups
from baremetal_allocclient.server.db.engine import SchemaOutOfDate
from baremetal_allocclient.server.db.models import (
    Allocation,
    Base,
    Conductor,
    Node,
    utcnow,
)
from baremetal_allocclient.tests.unit.server._sqlite import SQLiteDatabase


class DbTestCase(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.db = self.useFixture(SQLiteDatabase(upgrade=False)).db


class SchemaTests(DbTestCase):
    def test_fresh_database_is_out_of_date(self) -> None:
        self.assertRaises(SchemaOutOfDate, self.db.check_schema)
        self.db.upgrade()
        self.db.check_schema()
        self.db.upgrade()  # idempotent
        current, head = self.db.schema_revisions()
        self.assertEqual(head, current)

    def test_migrations_match_models(self) -> None:
        self.db.upgrade()
        with self.db.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn),
                                    Base.metadata)
        self.assertEqual([], diff)

    def test_heartbeat_is_precise_on_both_mysql_dialect_names(self) -> None:
        for url in ("mysql+pymysql://", "mariadb+pymysql://"):
            ddl = str(CreateTable(Conductor.__table__).compile(
                dialect=make_url(url).get_dialect()()))
            self.assertIn("heartbeat_at DATETIME(6) NOT NULL", ddl, url)

    def test_text_columns_are_binary_no_pad_on_mariadb_and_mysql(
            self) -> None:
        """MariaDB's ``utf8mb4_bin`` pads trailing spaces; MySQL 8 has no
        ``utf8mb4_nopad_bin`` (a ``mysql://`` URL to MariaDB is told
        apart when it connects, tests/functional/multiprocess)."""
        for url, collation in (
            ("mariadb+pymysql://", "utf8mb4_nopad_bin"),
            ("mysql+pymysql://", "utf8mb4_0900_bin"),
        ):
            ddl = str(CreateTable(Node.__table__).compile(
                dialect=make_url(url).get_dialect()()))
            for column in ("owner VARCHAR(255)", "resource_class VARCHAR(80)",
                           "description TEXT"):
                self.assertIn(f"{column} COLLATE {collation}", ddl, url)
        ddl = str(CreateTable(Node.__table__).compile(
            dialect=make_url("postgresql://").get_dialect()()))
        self.assertNotIn("COLLATE", ddl)


class JsonColumnTests(DbTestCase):
    def test_json_columns_store_what_json_dumps_writes(self) -> None:
        """Empty lists and objects skip the encoder; the text stored is
        the same, and every other value is encoded by it."""
        self.db.upgrade()
        values = ([], {}, [1, "a"], {"k": []}, {"x": None}, "")
        with self.db.engine.begin() as conn:
            for index, value in enumerate(values):
                conn.execute(insert(Allocation).values(
                    uuid=f"00000000-0000-4000-8000-{index:012d}",
                    state="active", traits=value, candidate_nodes=[],
                    extra={}, conductor_affinity="c"))
            stored = conn.execute(text(
                "SELECT traits FROM allocations ORDER BY id")).scalars()
            self.assertEqual([json.dumps(v) for v in values], list(stored))


class ReservationTests(DbTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.db.upgrade()
        self.request = selection.Request("rc")
        self.filters = selection.active_filters(self.request)
        with self.db.write() as session:
            node = Node(uuid="n-1", name="n1", driver="fake-hardware",
                        resource_class="rc", provision_state="available",
                        power_state="power off", maintenance=False,
                        instance_info={"keep": 1}, properties={}, extra={},
                        driver_info={}, driver_internal_info={},
                        network_data={}, protected=False, retired=False,
                        conductor_group="")
            session.add(node)
            allocs = [
                Allocation(uuid=f"a-{i}", state="allocating",
                           resource_class="rc", traits=[],
                           candidate_nodes=[], extra={},
                           conductor_affinity="me", created_at=utcnow())
                for i in range(2)
            ]
            session.add_all(allocs)
            session.flush()
            self.node_id = node.id
            self.alloc_ids = [a.id for a in allocs]

    def reserve(self, index: int, affinity: str = "me"
                ) -> reservation.Reservation:
        return reservation.reserve(self.db, self.alloc_ids[index],
                                   f"a-{index}", self.node_id, self.request,
                                   self.filters, affinity)

    def test_second_reservation_loses(self) -> None:
        self.assertEqual(reservation.Reservation.RESERVED, self.reserve(0))
        self.assertEqual(reservation.Reservation.NODE_TAKEN, self.reserve(1))
        with self.db.read() as session:
            node = session.get(Node, self.node_id)
            loser = session.get(Allocation, self.alloc_ids[1])
            assert node is not None and loser is not None
            self.assertEqual(("a-0", self.alloc_ids[0]),
                             (node.instance_uuid, node.allocation_id))
            self.assertEqual({"keep": 1, "traits": []}, node.instance_info)
            # the losing allocation was rolled back, still allocating
            self.assertEqual(("allocating", None),
                             (loser.state, loser.node_id))

    def test_foreign_affinity_is_not_touched(self) -> None:
        self.assertEqual(reservation.Reservation.NOT_OURS,
                         self.reserve(0, affinity="someone-else"))
        self.assertFalse(reservation.fail_allocation(
            self.db, self.alloc_ids[0], "a-0", "someone-else", "x"))

    def test_same_id_other_uuid_is_not_touched(self) -> None:
        """A worker holding a deleted allocation's id never writes into
        another allocation with that id (ids are not reused either)."""
        self.assertEqual(
            reservation.Reservation.ALLOCATION_DELETED,
            reservation.reserve(self.db, self.alloc_ids[0], "deleted-one",
                            self.node_id, self.request, self.filters, "me"),
        )
        self.assertFalse(reservation.fail_allocation(
            self.db, self.alloc_ids[0], "deleted-one", "me", "x"))
        with self.db.read() as session:
            row = session.get(Allocation, self.alloc_ids[0])
            node = session.get(Node, self.node_id)
            assert row is not None and node is not None
            self.assertEqual(("allocating", None), (row.state, row.last_error))
            self.assertIsNone(node.allocation_id)

    def test_deleted_allocation_id_is_never_reused(self) -> None:
        with self.db.write() as session:
            top = session.get(Allocation, self.alloc_ids[1])
            assert top is not None
            freeing.release_in_session(session, top)
        with self.db.write() as session:
            fresh = Allocation(uuid="a-new", state="allocating",
                               resource_class="rc", traits=[],
                               candidate_nodes=[], extra={},
                               conductor_affinity="me", created_at=utcnow())
            reservation.insert_allocation(session, fresh)
        self.assertGreater(fresh.id, self.alloc_ids[1])

    def test_release_frees_the_node(self) -> None:
        self.reserve(0)
        with self.db.write() as session:
            alloc = session.get(Allocation, self.alloc_ids[0])
            assert alloc is not None
            freeing.release_in_session(session, alloc)
        with self.db.read() as session:
            node = session.get(Node, self.node_id)
            assert node is not None
            self.assertEqual((None, None, {"keep": 1}),
                             (node.instance_uuid, node.allocation_id,
                              node.instance_info))
            self.assertIsNone(session.scalar(
                select(Allocation.id).where(Allocation.uuid == "a-0")))

    def test_funnel_counts_and_candidates(self) -> None:
        request = selection.Request("rc", traits=("CUSTOM_X",))
        with self.db.read() as session:
            self.assertEqual([1, 1, 1, 1, 1, 0], [
                c for _, c in matching.funnel_counts(session, request).counts])
            self.assertEqual([(self.node_id, "n1")], matching.candidates(
                session, self.request, self.filters))
        with self.db.write() as session:
            lookups.replace_traits(session, self.node_id,
                                   ["CUSTOM_X", "CUSTOM_Y"])
        with self.db.read() as session:
            self.assertEqual(1, matching.funnel_counts(
                session, request).candidates)
