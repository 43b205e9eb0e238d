"""Telling whether a commit happened after the database went away during it.

A write whose connection is lost while committing
(:class:`~baremetal_allocclient.server.db.engine.CommitOutcomeUnknown`)
may or may not have been applied.  Answering 503 "changed nothing" could
then be false (a DELETE that did delete, a create that did store), and a
client retrying on that answer would see a 404 or make a second
allocation.  The service instead reads the database again once it
answers (:func:`applied`), and says what happened (:func:`resolved`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session

from baremetal_allocclient.server.db.engine import (
    CommitOutcomeUnknown,
    Database,
    is_unavailable,
)
from baremetal_allocclient.server.db.models import Allocation

LOG = logging.getLogger(__name__)

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


def stored(allocation_id: int, uuid: str, present: bool = True
           ) -> Callable[[Session], bool]:
    """A probe: whether the allocation row is there (or, with
    ``present=False``, gone)."""
    def probe(session: Session) -> bool:
        row = session.scalar(select(Allocation.id).where(
            Allocation.id == allocation_id, Allocation.uuid == uuid))
        return (row is not None) == present
    return probe


def resolved(db: Database, exc: CommitOutcomeUnknown,
             probe: Callable[[Session], bool]) -> bool:
    """After a commit lost with the connection: True when ``probe`` shows
    it happened; otherwise the request's answer is a 503, "changed
    nothing" when the database shows that, "may or may not" when it did
    not answer again in time."""
    outcome = applied(db, probe)
    if outcome:
        LOG.info("A commit lost with the connection had been applied")
        return True
    if outcome is None:
        raise exc
    assert exc.__cause__ is not None  # the driver's connection error
    raise exc.__cause__
