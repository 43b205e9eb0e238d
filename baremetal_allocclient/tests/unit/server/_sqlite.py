"""A reference-server database on a new SQLite file, for unit tests."""

from __future__ import annotations

import os

import fixtures

from baremetal_allocclient.server.db.engine import Database


class SQLiteDatabase(fixtures.Fixture):
    """``self.db``: a :class:`Database` on a file of its own, at the newest
    schema unless ``upgrade`` is False; disposed and removed afterwards."""

    def __init__(self, upgrade: bool = True) -> None:
        super().__init__()
        self._upgrade = upgrade

    def _setUp(self) -> None:
        tmp = self.useFixture(fixtures.TempDir()).path
        self.db = Database("sqlite:///" + os.path.join(tmp, "t.sqlite"))
        self.addCleanup(self.db.dispose)
        if self._upgrade:
            self.db.upgrade()
