"""Telling whether a commit happened after the database went away during it.

A write whose connection is lost while committing
(:class:`~baremetal_allocclient.server.db.engine.CommitOutcomeUnknown`)
may or may not have been applied.  Answering 503 "changed nothing" could
then be false (a DELETE that did delete, a create that did store), and a
client retrying on that answer would see a 404 or make a second
allocation.  The handler instead reads the database again once it
answers, and says what happened.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy.orm import Session

from baremetal_allocclient.server.db.engine import Database, is_unavailable

#: How long a request waits for the database to answer again.
VERIFY_FOR = 10.0
_PAUSE = 0.25


def applied(db: Database, probe: Callable[[Session], bool]
            ) -> bool | None:
    """``probe`` (does the database show the change?) once the database
    answers; None when it did not answer within :data:`VERIFY_FOR`."""
    deadline = time.monotonic() + VERIFY_FOR
    while True:
        try:
            with db.read() as session:
                return probe(session)
        except Exception as exc:
            if not is_unavailable(exc):
                raise
            if time.monotonic() >= deadline:
                return None
        time.sleep(_PAUSE)
