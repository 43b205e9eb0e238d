"""SQLAlchemy's private pieces the server uses (``db.sqlalchemy_private``):
each named by a test that fails by its name when it goes or changes, and
each doing what the server relies on."""

from __future__ import annotations

import os
from typing import Any
from unittest import mock

import testtools
from sqlalchemy import (
    Column,
    Integer,
    MetaData,
    Table,
    bindparam,
    create_engine,
    event,
    select,
)
from sqlalchemy.pool import Pool, QueuePool

from baremetal_allocclient.server.db import sqlalchemy_private


class PrivatePiecesTests(testtools.TestCase):
    """One test a piece: its failure names the piece."""

    def _assert_usable(self, name: str) -> None:
        self.assertTrue(sqlalchemy_private.PIECES[name](),
                        f"SQLAlchemy's {name} is missing or changed: the "
                        f"server runs on its public API only (slower)")

    def test_pool_invalidate(self) -> None:
        self._assert_usable("Pool._invalidate")

    def test_connection_fairy_close_special(self) -> None:
        self._assert_usable("_ConnectionFairy._close_special")

    def test_sqlcompiler_process_parameters_for_postcompile(self) -> None:
        self._assert_usable(
            "SQLCompiler._process_parameters_for_postcompile")

    def test_every_piece_is_named_by_a_test(self) -> None:
        named = {"Pool._invalidate", "_ConnectionFairy._close_special",
                 "SQLCompiler._process_parameters_for_postcompile"}
        self.assertEqual(named, set(sqlalchemy_private.PIECES))

    def test_the_driver_path_runs_on_this_sqlalchemy(self) -> None:
        self.assertEqual([], sqlalchemy_private.MISSING)
        public_only = os.environ.get(
            sqlalchemy_private.PUBLIC_ONLY_VARIABLE) == "1"
        self.assertEqual(not public_only, sqlalchemy_private.USABLE)

    def test_a_changed_piece_is_found(self) -> None:
        def changed(self: Any, connection: Any) -> None:
            """``Pool._invalidate`` with another signature."""

        with mock.patch.object(Pool, "_invalidate", changed):
            self.assertEqual(["Pool._invalidate"],
                             sqlalchemy_private.missing())
        with mock.patch.object(Pool, "_invalidate", None):
            self.assertEqual(["Pool._invalidate"],
                             sqlalchemy_private.missing())
        self.assertEqual([], sqlalchemy_private.missing())


class WhatThePiecesDoTests(testtools.TestCase):
    """What the server relies on each piece to do, on SQLite."""

    def setUp(self) -> None:
        super().setUp()
        self.engine = create_engine(
            "sqlite://", poolclass=QueuePool, pool_size=3, max_overflow=0,
            pool_reset_on_return=None)
        self.addCleanup(self.engine.dispose)

    def test_invalidate_pool_replaces_what_it_handed_out_before(self) -> None:
        lost = self.engine.raw_connection()
        other = self.engine.raw_connection()
        other_dbapi = other.dbapi_connection
        other.close()  # back in the pool, handed out before the loss
        sqlalchemy_private.invalidate_pool(
            self.engine.pool, lost, Exception("lost"))
        self.assertFalse(lost.is_valid)
        again = self.engine.raw_connection()
        self.addCleanup(again.close)
        self.assertIsNot(other_dbapi, again.dbapi_connection)

    def test_check_in_ended_skips_the_reset(self) -> None:
        resets: list[bool] = []

        @event.listens_for(self.engine, "reset")
        def _reset(_dbapi: Any, _record: Any, state: Any) -> None:
            resets.append(state.transaction_was_reset)

        proxy = self.engine.raw_connection()
        sqlalchemy_private.check_in_ended(proxy)
        self.assertEqual([True], resets)
        self.assertEqual(0, self.engine.pool.checkedout())  # type: ignore

    def test_expanded_writes_an_in_list(self) -> None:
        table = Table("t", MetaData(), Column("id", Integer))
        query = select(table.c.id).where(
            table.c.id.in_(bindparam("ids", expanding=True)))
        compiled: Any = query.compile(dialect=self.engine.dialect)
        for ids in ([4, 5, 6], []):
            state = sqlalchemy_private.expanded(compiled, {"ids": ids})
            with self.engine.connect() as conn:
                conn.exec_driver_sql(
                    "CREATE TABLE IF NOT EXISTS t (id INTEGER)")
                conn.exec_driver_sql("DELETE FROM t")
                conn.exec_driver_sql("INSERT INTO t VALUES (4), (6), (7)")
                rows = conn.exec_driver_sql(
                    state.statement, tuple(
                        state.parameters[name]
                        for name in state.positiontup or ())).all()
            self.assertEqual(sorted(set(ids) & {4, 6, 7}),
                             sorted(row[0] for row in rows))
