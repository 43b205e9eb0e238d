"""Constraints in SQL on SQLite, PostgreSQL and MariaDB.

The server evaluates constraints in the database; the SDK evaluates the
same ones in Python against Ironic.  On a fleet of awkward property
values (numeric strings, floats, booleans, nested values, case
variants, missing keys) every request's funnel counted in SQL must equal
the funnel computed by the shared pure functions, on every database.
The reservation compare-and-set re-checks the constraints: a node that
stopped matching after it was picked is not taken.
"""

from __future__ import annotations

import random
from typing import Any

import testtools
from sqlalchemy import delete, update

from baremetal_allocclient import constraints as model
from baremetal_allocclient.constraints import Constraints, Op, Order
from baremetal_allocclient.server.allocation import (
    matching,
    reservation,
    selection,
)
from baremetal_allocclient.server.db.models import (
    Allocation,
    Node,
    NodeTrait,
    utcnow,
)
from baremetal_allocclient.tests.fixtures import databases

_RC = "gold"
#: (name, properties, traits, group, shard, owner, lessee, maintenance)
_FLEET: tuple[tuple[Any, ...], ...] = (
    ("n1", {"cpus": 8, "memory_mb": 16384, "cpu_arch": "x86_64"},
     ("CUSTOM_A",), "g1", "s1", "p1", None, False),
    ("n2", {"cpus": "16", "memory_mb": 32768.5, "cpu_arch": "X86_64"},
     ("CUSTOM_A", "CUSTOM_GPU"), "g2", None, None, "p1", False),
    ("n3", {"cpus": " 4 ", "cpu_arch": "aarch64", "rack": "r1",
            "fast": True}, (), "g1", "s2", "p2", None, False),
    ("n4", {"cpus": "many", "memory_mb": None, "nested": {"a": [1, 2]},
            "CPUs": 64}, ("CUSTOM_GPU",), "", "s1", None, "p2", False),
    ("n5", {"cpus": 1e3, "memory_mb": 8192, "cpu_arch": "x86_64"},
     ("CUSTOM_B",), "g1", "s1", "p1", "p2", True),
    ("n6", {}, ("CUSTOM_A",), "g2", None, None, None, False),
)


def _p(key: str, op: str, value: Any) -> model.PropertyConstraint:
    return model.property_constraint(key, Op(op), value)


#: Requests covering every constraint and operator.
_REQUESTS: tuple[tuple[dict[str, Any], Constraints], ...] = (
    ({}, Constraints(properties=(_p("cpus", "min", 8),))),
    ({}, Constraints(properties=(_p("cpus", "min", 8.5),))),
    ({}, Constraints(properties=(_p("cpus", "eq", 16),))),
    ({}, Constraints(properties=(_p("cpus", "eq", "4"),))),
    ({}, Constraints(properties=(_p("cpu_arch", "eq", "x86_64"),))),
    ({}, Constraints(properties=(_p("CPUs", "min", 1),))),
    ({}, Constraints(properties=(_p("fast", "eq", "true"),))),
    ({}, Constraints(properties=(_p("nested", "eq", '{"a":[1,2]}'),))),
    ({}, Constraints(properties=(_p("memory_mb", "min", 16384),
                                 _p("cpu_arch", "eq", "x86_64"),
                                 _p("cpus", "min", 2)))),
    ({"traits": ("CUSTOM_A",)},
     Constraints(forbidden_traits=("CUSTOM_GPU", "CUSTOM_B"))),
    ({}, Constraints(conductor_group="g1", shard="s1")),
    ({"owner": "p2"}, Constraints(node_owner="p2")),
    ({}, Constraints(node_lessee="p1")),
    ({"candidate_nodes": ("uuid-n1", "uuid-n3")},
     Constraints(node_name="n3", require_node_name=True)),
    ({}, Constraints(shard="nope")),
    ({}, Constraints(properties=(_p("cpus", "max", 8),))),
    ({}, Constraints(properties=(_p("cpus", "max", 4.5),
                                 _p("cpus", "min", 4)))),
    ({}, Constraints(properties=(_p("cpu_arch", "in",
                                    ["x86_64", "aarch64"]),))),
    ({}, Constraints(properties=(_p("cpus", "in", [16, "4", "many"]),))),
    ({}, Constraints(properties=(_p("cpus", "not_in", ["8", 16.0]),))),
    ({}, Constraints(properties=(_p("memory_mb", "in", ["x"]),))),
    ({}, Constraints(properties=(_p("memory_mb", "not_in", [8192]),))),
    ({}, Constraints(properties=(_p("fast", "in", ["true", 1]),))),
    ({}, Constraints(properties=(_p("nested", "not_in",
                                    ['{"a":[1,2]}']),))),
    ({}, Constraints(properties=(_p("rack", "exists", True),))),
    ({}, Constraints(properties=(_p("rack", "not_exists", True),))),
    ({}, Constraints(properties=(_p("memory_mb", "exists", True),
                                 _p("cpu_arch", "not_exists", True)))),
    ({}, Constraints(any_traits=("CUSTOM_B", "CUSTOM_GPU"))),
    ({}, Constraints(any_of=(
        (_p("cpus", "min", 16), _p("cpu_arch", "in", ["X86_64"])),
        (_p("rack", "exists", True),),
        (_p("CPUs", "max", 64), _p("memory_mb", "not_in", [1])),
    ))),
    ({}, Constraints(properties=(_p("cpus", "min", 1),), any_of=(
        (_p("fast", "eq", "true"),), (_p("cpu_arch", "eq", "nope"),)))),
    ({"traits": ("CUSTOM_A",)},
     Constraints(any_traits=("CUSTOM_GPU",), forbidden_traits=("X",))),
)


class _ConstraintSqlTests(databases.MigratedPerClass):
    """Mixin; ``kind`` is set by the concrete classes."""

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        with cls.db.write() as session:
            for (name, props, traits, group, shard, owner, lessee,
                 maint) in _FLEET:
                node = Node(uuid=f"uuid-{name}", name=name,
                            driver="fake-hardware", resource_class=_RC,
                            provision_state="available",
                            power_state="power off", maintenance=maint,
                            properties=props, conductor_group=group,
                            shard=shard, owner=owner, lessee=lessee)
                session.add(node)
                session.flush()
                for trait in traits:
                    session.add(NodeTrait(node_id=node.id, trait=trait))

    @staticmethod
    def documents() -> list[dict[str, Any]]:
        """The fleet as Ironic would list it (what the SDK filters)."""
        return [
            {"uuid": f"uuid-{name}", "name": name, "resource_class": _RC,
             "provision_state": "available", "maintenance": maint,
             "power_state": "power off", "instance_uuid": None,
             "properties": props, "traits": list(traits),
             "conductor_group": group, "shard": shard, "owner": owner,
             "lessee": lessee}
            for (name, props, traits, group, shard, owner, lessee,
                 maint) in _FLEET
        ]

    def test_sql_funnel_equals_the_pure_funnel(self) -> None:
        case: Any = self
        for fields, wanted in _REQUESTS:
            request = selection.Request(_RC, constraints=wanted, **fields)
            with self.db.read() as session:
                in_sql = matching.funnel_counts(session, request)
            in_python, _ = model.funnel(request.selection, self.documents())
            case.assertEqual(in_python, in_sql, (fields, wanted))

    def test_candidates_are_exactly_the_matching_nodes(self) -> None:
        case: Any = self
        for fields, wanted in _REQUESTS:
            request = selection.Request(_RC, constraints=wanted, **fields)
            filters = selection.active_filters(request)
            with self.db.read() as session:
                found = {name for _id, name in
                         matching.candidates(session, request, filters)}
            _, survivors = model.funnel(request.selection, self.documents())
            case.assertEqual({n["name"] for n in survivors}, found,
                             (fields, wanted))

    def test_best_fit_order_equals_the_pure_order(self) -> None:
        """The SQL's excess and order are the shared functions' (ties
        by UUID), with and without minimums."""
        case: Any = self
        for wanted in (Constraints(order=Order.BEST_FIT),
                       Constraints(properties=(_p("cpus", "min", 2),
                                               _p("memory_mb", "min", 8192)),
                                   order=Order.BEST_FIT),
                       Constraints(properties=(_p("CPUs", "min", 0),),
                                   order=Order.BEST_FIT)):
            request = selection.Request(_RC, constraints=wanted)
            filters = selection.active_filters(request)
            with self.db.read() as session:
                rows = matching.best_fit_rows(session, request, filters, 10)
            _, survivors = model.funnel(request.selection, self.documents())
            terms = model.fit_terms(wanted)
            expected = [(n["name"], model.excess(terms, n["properties"]))
                        for n in model.best_fit(wanted, survivors)]
            got = [(name, excess) for _i, name, _u, excess in rows]
            case.assertEqual([n for n, _ in expected], [n for n, _ in got],
                             wanted)
            for (_n, want), (_m, have) in zip(expected, got, strict=True):
                case.assertAlmostEqual(want, have, places=9)

    def test_a_group_locks_the_best_fitting_nodes(self) -> None:
        """The group reservation's locking read (FOR UPDATE SKIP LOCKED,
        ordered by excess) takes the best-fitting nodes first."""
        case: Any = self
        wanted = Constraints(properties=(_p("cpus", "min", 2),),
                             order=Order.BEST_FIT)
        request = selection.Request(_RC, constraints=wanted)
        filters = selection.active_filters(request)
        with self.db.write() as session:
            locked = reservation.lock_best_fit_nodes(session, request,
                                                     filters, 2)
        _, survivors = model.funnel(request.selection, self.documents())
        expected = [n["name"] for n in model.best_fit(wanted, survivors)]
        case.assertEqual(expected[:2], [c.name for c in locked])

    def test_reservation_rechecks_constraints(self) -> None:
        """A node picked while it matched, changed before the
        compare-and-set, is not taken; unchanged, it is."""
        case: Any = self
        wanted = Constraints(properties=(_p("rack", "eq", "r1"),))
        request = selection.Request(_RC, constraints=wanted)
        filters = selection.active_filters(request)
        with self.db.read() as session:
            (row,) = matching.candidate_window(session, request, filters, 1)
        picked = selection.Candidate._make(row)
        case.assertEqual("n3", picked.name)
        alloc_id, alloc_uuid = self._allocation()
        case.addCleanup(self._free, picked.id, alloc_id)
        self._set_rack(picked.id, "r2")
        outcome = reservation.reserve(self.db, alloc_id, alloc_uuid, picked.id,
                                  request, filters, "c1")
        case.assertIs(reservation.Reservation.NODE_TAKEN, outcome)
        self._set_rack(picked.id, "r1")
        outcome = reservation.reserve(self.db, alloc_id, alloc_uuid, picked.id,
                                  request, filters, "c1")
        case.assertIs(reservation.Reservation.RESERVED, outcome)

    def _allocation(self) -> tuple[int, str]:
        uuid = f"alloc-{random.randrange(10**9)}"
        with self.db.write() as session:
            alloc = Allocation(uuid=uuid, state="allocating",
                               resource_class=_RC, conductor_affinity="c1",
                               created_at=utcnow())
            session.add(alloc)
            session.flush()
            return alloc.id, uuid

    def _free(self, node_id: int, alloc_id: int) -> None:
        with self.db.write() as session:
            session.execute(update(Node).where(Node.id == node_id).values(
                allocation_id=None, instance_uuid=None))
            session.execute(delete(Allocation).where(
                Allocation.id == alloc_id))

    def _set_rack(self, node_id: int, rack: str) -> None:
        """Change a property through the ORM, as the API does."""
        with self.db.write() as session:
            node = session.get(Node, node_id)
            assert node is not None
            node.properties = {**node.properties, "rack": rack}


class SQLiteConstraintTests(_ConstraintSqlTests, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLConstraintTests(_ConstraintSqlTests, testtools.TestCase):
    kind = "postgresql"


class MySQLConstraintTests(_ConstraintSqlTests, testtools.TestCase):
    kind = "mysql"
