"""After a commit lost with the connection: read again and say what
happened (:mod:`baremetal_allocclient.server.allocation.commit_check`)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session

from baremetal_allocclient.server.allocation import commit_check
from baremetal_allocclient.server.db.engine import (
    CommitOutcomeUnknown,
    Database,
)
from baremetal_allocclient.server.db.models import Allocation

LOG = logging.getLogger(__name__)


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
    applied = commit_check.applied(db, probe)
    if applied:
        LOG.info("A commit lost with the connection had been applied")
        return True
    if applied is None:
        raise exc
    assert exc.__cause__ is not None  # the driver's connection error
    raise exc.__cause__
