"""The change log's SQL: hand out cursors in commit order, read after a
cursor, forget what is older than the retention.

Rows are written by triggers on ``allocations`` in the transaction of
the change (migration 0017), without a cursor.  :func:`sequence` gives
committed rows their cursors in a transaction that first locks the one
row of ``allocation_change_cursor``: sequencers run one after the
other, each reads (after taking the lock) what was committed before it,
and commits cursors above every cursor committed before.  So the rows
with a cursor always form a prefix ``1..last_seq`` (less the pruned
ones) and a reader that saw cursor ``n`` never later finds one below
``n``: an auto-increment id, handed out when a row is inserted and not
when it commits, has no such property.  Two changes of one allocation
are in the order of their ids (the second transaction waited for the
first's row lock), which :func:`sequence` keeps.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from sqlalchemy import delete, func, select, update

from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import (
    AllocationChange,
    AllocationChangeCursor,
    utcnow,
)

#: Rows sequenced or read per statement.
BATCH = 1000
_CURSOR_ROW = AllocationChangeCursor.id == 1


@dataclass(frozen=True)
class Position:
    """The last cursor handed out and the highest one pruned (a watch
    from below it must list again)."""

    last: int
    pruned_through: int


def position(db: Database) -> Position:
    """Where the log stands now."""
    with db.read() as session:
        row = session.execute(
            select(AllocationChangeCursor.last_seq,
                   AllocationChangeCursor.pruned_through).where(_CURSOR_ROW)
        ).one()
    return Position(int(row[0]), int(row[1]))


def pending(db: Database) -> bool:
    """Whether a committed change waits for its cursor."""
    with db.read() as session:
        found = session.execute(
            select(AllocationChange.id).where(
                AllocationChange.seq.is_(None)).limit(1)).first()
    return found is not None


def sequence(db: Database, batch: int = BATCH) -> int:
    """Hand cursors to up to ``batch`` committed rows, in id order;
    how many got one."""
    with db.write() as session:
        # The lock first: the reads below see what committed before it.
        # Skipped when another process holds it: that one is numbering
        # these very rows (waiting for it timed out under a burst on
        # MariaDB, 4 processes).  SQLite's write transaction is the lock.
        found = session.execute(
            select(AllocationChangeCursor.last_seq).where(_CURSOR_ROW)
            .with_for_update(skip_locked=True)).scalar_one_or_none()
        if found is None:
            return 0
        last = int(found)
        ids = session.execute(
            select(AllocationChange.id).where(AllocationChange.seq.is_(None))
            .order_by(AllocationChange.id).limit(batch)).scalars().all()
        if not ids:
            return 0
        now = utcnow()
        session.execute(update(AllocationChange), [
            {"id": ident, "seq": last + offset, "sequenced_at": now}
            for offset, ident in enumerate(ids, start=1)])
        session.execute(update(AllocationChangeCursor).where(_CURSOR_ROW)
                        .values(last_seq=last + len(ids)))
    return len(ids)


def read(db: Database, after: int, upto: int | None = None,
         limit: int = BATCH) -> list[AllocationChange]:
    """Up to ``limit`` changes with a cursor above ``after`` (and at most
    ``upto``), in cursor order."""
    query = select(AllocationChange).where(AllocationChange.seq > after)
    if upto is not None:
        query = query.where(AllocationChange.seq <= upto)
    with db.read() as session:
        rows = session.execute(
            query.order_by(AllocationChange.seq).limit(limit)
        ).scalars().all()
        session.expunge_all()
    return list(rows)


def prune(db: Database, retention: float,
          now: datetime.datetime | None = None) -> int:
    """Forget the changes sequenced more than ``retention`` seconds ago;
    the highest cursor forgotten (0: none)."""
    before = (now or utcnow()) - datetime.timedelta(seconds=retention)
    # Found before the lock (a scan): sequencers do not wait for it.
    with db.read() as session:
        highest = session.execute(
            select(func.max(AllocationChange.seq)).where(
                AllocationChange.sequenced_at < before)).scalar_one()
    if highest is None:
        return 0
    with db.write() as session:
        session.execute(update(AllocationChangeCursor).where(_CURSOR_ROW)
                        .values(last_seq=AllocationChangeCursor.last_seq))
        session.execute(delete(AllocationChange).where(
            AllocationChange.seq <= highest))
        session.execute(update(AllocationChangeCursor).where(_CURSOR_ROW)
                        .where(AllocationChangeCursor.pruned_through < highest)
                        .values(pruned_through=highest))
    return int(highest)
