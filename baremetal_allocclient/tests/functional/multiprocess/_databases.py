"""A database of the test's own on SQLite, PostgreSQL or MariaDB.

PostgreSQL and MariaDB URLs come from the variables CI sets
(``.ci/run``); each test class creates a database with a random name on
that server and drops exactly that one at the end, so parallel test
workers and repeated runs never see each other's rows.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest
import uuid
from typing import Any, ClassVar

from sqlalchemy import create_engine
from sqlalchemy.engine import URL, make_url

from baremetal_allocclient.server.db.engine import Database

POSTGRESQL_ENV = "BAREMETAL_ALLOC_TEST_POSTGRESQL_URL"
MYSQL_ENV = "BAREMETAL_ALLOC_TEST_MYSQL_URL"
KINDS = ("sqlite", "postgresql", "mysql")
_ENV = {"postgresql": POSTGRESQL_ENV, "mysql": MYSQL_ENV}


def server_url(kind: str) -> URL:
    """The configured server URL for ``kind``; SkipTest when unset."""
    env = _ENV[kind]
    value = os.environ.get(env)
    if not value:
        raise unittest.SkipTest(
            f"{env} is not set; set it to a {kind} SQLAlchemy URL "
            f"(as .ci/run does) to run the {kind} tests"
        )
    return make_url(value)


class ScratchDatabase:
    """Creates its own database on construction; :meth:`drop` removes it."""

    def __init__(self, kind: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown database kind {kind!r}")
        self.kind = kind
        self._tmpdir: str | None = None
        self._created: URL | None = None
        if kind == "sqlite":
            self._tmpdir = tempfile.mkdtemp(prefix="bm-alloc-mp-")
            self.url = "sqlite:///" + os.path.join(self._tmpdir, "db.sqlite")
            return
        base = server_url(kind)
        self.name = "test_" + uuid.uuid4().hex[:16]
        engine = create_engine(base, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                if kind == "mysql":
                    conn.exec_driver_sql(
                        f"CREATE DATABASE {self.name} CHARACTER SET utf8mb4"
                    )
                else:
                    conn.exec_driver_sql(f"CREATE DATABASE {self.name}")
        finally:
            engine.dispose()
        self._created = base
        self.url = base.set(database=self.name).render_as_string(
            hide_password=False
        )

    def drop(self) -> None:
        """Drop the database this object created (and nothing else)."""
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None
        if self._created is None:
            return
        engine = create_engine(self._created, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                force = " WITH (FORCE)" if self.kind == "postgresql" else ""
                conn.exec_driver_sql(
                    f"DROP DATABASE IF EXISTS {self.name}{force}"
                )
        finally:
            engine.dispose()
        self._created = None


def migrated_for_class(case: type[unittest.TestCase], kind: str
                       ) -> Database:
    """A migrated scratch database of ``kind`` for the test class
    ``case``, as a ``Database``: disposed and dropped by the class's
    clean-ups."""
    scratch = ScratchDatabase(kind)
    case.addClassCleanup(scratch.drop)
    db = Database(scratch.url)
    case.addClassCleanup(db.dispose)
    db.upgrade()
    return db


class MigratedPerClass:
    """A test-class mixin: ``db``, a migrated scratch database of the
    class's ``kind``, shared by its tests and dropped after them."""

    kind: ClassVar[str]
    db: ClassVar[Database]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        case: Any = cls
        cls.db = migrated_for_class(case, cls.kind)
