"""A candidate window costs what it returns, not what the fleet holds.

Each search reads up to ``CANDIDATE_WINDOW`` free nodes from a random
node id on (``matching.candidate_window``).  In a fleet in use most
nodes below that id may be deployed, and a large fleet may have
thousands of free nodes; neither may make the window read them.  Three
resource classes of one database, each with free nodes at its highest
ids: a small one (20 deployed, 40 free), one mostly deployed (3,000
deployed, 40 free) and a wide one (3,000 free).  A window from the
lowest id must read about as many rows in the second and third as in
the first, as the database itself counts them once the driver
prepared the statement (``_reads``).

A trait every node has (6,100 nodes) is looked up for the nodes at
hand, in the window and in the check of one node that the
compare-and-set taking it makes: a request with it reads at most about
twice what the same request without it reads, not the traits of every
node that has it.  A request naming five candidate nodes reads them by
UUID, in one statement to check they exist and one window, not the
class's free nodes until it meets them.
"""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

import testtools
from sqlalchemy import bindparam, event, insert, select

from baremetal_allocclient.server import node_states as ns
from baremetal_allocclient.server.allocation import matching, selection
from baremetal_allocclient.server.allocation.service import creating
from baremetal_allocclient.server.db.driver_statements import (
    driver_statement,
)
from baremetal_allocclient.server.db.models import Node, NodeTrait
from baremetal_allocclient.server.domain.principal import Principal
from baremetal_allocclient.tests.fixtures import databases
from baremetal_allocclient.tests.functional.multiprocess import _reads

#: Reads allowed beyond twice the small class's (SQLite counts
#: virtual-machine steps in tens): far below one per node passed over.
SLACK = 100
#: A trait every node of every class has.
COMMON = "CUSTOM_COMMON"


class _WindowReads(databases.MigratedPerClass):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        for rc, deployed, free in (("small", 20, 40), ("in-use", 3000, 40),
                                   ("wide", 0, 3000)):
            cls._nodes(rc, ns.ACTIVE, deployed)
            cls._nodes(rc, ns.AVAILABLE, free)
        with cls.db.write() as session:
            ids = session.scalars(select(Node.id)).all()
            session.execute(insert(NodeTrait), [
                {"node_id": node_id, "trait": COMMON} for node_id in ids])
        _reads.analyze(cls.db, cls.kind)

    @classmethod
    def _nodes(cls, rc: str, state: str, count: int) -> None:
        if not count:
            return
        with cls.db.write() as session:
            session.execute(insert(Node), [
                {"uuid": str(uuidlib.uuid4()), "driver": "fake-hardware",
                 "resource_class": rc, "provision_state": state,
                 "power_state": "power off", "maintenance": False}
                for _ in range(count)])

    def _window_reads(self, rc: str, traits: tuple[str, ...] = (),
                      candidates: tuple[str, ...] = ()) -> int:
        request = selection.Request(resource_class=rc, traits=traits,
                                    candidate_nodes=candidates)
        filters = tuple(selection.active_filters(request))
        with self.db.read_connection() as conn:
            def window() -> list[selection.CandidateRow]:
                return matching.candidate_window(conn, request, filters, 1)

            test: Any = self
            test.assertEqual(
                len(candidates) or matching.CANDIDATE_WINDOW, len(window()))
            return _reads.Reads(self.kind, conn).of(window)

    def _last_free(self, rc: str, count: int) -> list[str]:
        """The UUIDs of the class's ``count`` free nodes of highest id."""
        with self.db.read_connection() as conn:
            return list(conn.scalars(
                select(Node.uuid).where(Node.resource_class == rc,
                                        Node.provision_state == ns.AVAILABLE)
                .order_by(Node.id.desc()).limit(count)))

    def _node_check_reads(self, rc: str, traits: tuple[str, ...]) -> int:
        """What checking that one free node passes the filters of a
        request reads: the predicates of the compare-and-set that takes a
        node (``reservation._take_node``)."""
        request = selection.Request(resource_class=rc, traits=traits)
        filters = tuple(selection.active_filters(request))
        check = select(Node.id).where(Node.id == bindparam("node"),
                                      *matching.predicates(filters))
        with self.db.read_connection() as conn:
            node_id = conn.scalar(
                select(Node.id).where(Node.resource_class == rc,
                                      Node.provision_state == ns.AVAILABLE)
                .order_by(Node.id.desc()).limit(1))
            statement = driver_statement(check, conn.dialect)
            params = {**matching.filter_params(request), "node": node_id}

            def read() -> Any:
                return statement.first(conn, params)

            test: Any = self
            test.assertIsNotNone(read())
            return _reads.Reads(self.kind, conn).of(read)

    def _assert_about(self, reads: int, baseline: int, what: str) -> None:
        """``reads`` at most twice ``baseline`` and :data:`SLACK`."""
        test: Any = self
        test.assertLessEqual(reads, baseline * 2 + SLACK,
                             f"{what} read {reads}, against {baseline}")

    def test_window_reads_do_not_grow_with_the_fleet(self) -> None:
        small = self._window_reads("small")
        for rc in ("in-use", "wide"):
            self._assert_about(self._window_reads(rc), small,
                               f"{rc}: a window (class of 60 nodes)")

    def test_a_trait_is_read_for_the_nodes_at_hand(self) -> None:
        for rc in ("small", "in-use", "wide"):
            for reads in (self._window_reads, self._node_check_reads):
                self._assert_about(
                    reads(rc, (COMMON,)), reads(rc, ()),
                    f"{rc}: {reads.__name__} with a trait (without it)")

    def test_a_window_among_candidates_reads_them_by_uuid(self) -> None:
        small = self._window_reads("small")
        for rc in ("small", "wide"):
            named = tuple(self._last_free(rc, 5))
            self._assert_about(
                self._window_reads(rc, candidates=named), small,
                f"{rc}: a window among 5 candidates (32 in a class of 60)")

    def test_candidates_are_looked_up_in_one_statement(self) -> None:
        test: Any = self
        sent: list[str] = []

        def count(*args: Any) -> None:
            sent.append(args[2])

        admin = Principal(user=None, project=None, admin=True)
        named = self._last_free("wide", 40)
        for idents in (named[:1], [name.upper() for name in named]):
            sent.clear()
            event.listen(self.db.engine, "before_cursor_execute", count)
            try:
                found = creating.candidates_in_read(self.db, admin, idents)
            finally:
                event.remove(self.db.engine, "before_cursor_execute", count)
            test.assertEqual([ident.lower() for ident in idents], found)
            test.assertEqual(1, len(sent), sent)


class SQLiteWindowReads(_WindowReads, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLWindowReads(_WindowReads, testtools.TestCase):
    kind = "postgresql"


class MySQLWindowReads(_WindowReads, testtools.TestCase):
    kind = "mysql"
