"""Conductor registration, heartbeats and the take-over compare-and-set.

Every timestamp here comes from the database's clock
(:func:`database_now`), so processes on hosts with skewed clocks agree
on whose heartbeat is stale.  The decisions themselves (who is dead,
whose allocations to take) are pure functions in
:mod:`baremetal_allocclient.server.allocation.liveness`.
"""

from __future__ import annotations

import datetime

from sqlalchemy import ColumnElement, func, or_, select, text, update
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session

from baremetal_allocclient.server.allocation.liveness import ConductorState
from baremetal_allocclient.server.allocation.states import ALLOCATING
from baremetal_allocclient.server.db.engine import Database, is_lost_race
from baremetal_allocclient.server.db.lookups import rowcount
from baremetal_allocclient.server.db.models import (
    Allocation,
    Conductor,
    utcnow,
)

# Naive UTC "now" with sub-second precision, per dialect.  SQLite is a
# local file, so every process sharing it runs on this host's clock.
_NOW_SQL = {
    "postgresql": "SELECT timezone('utc', clock_timestamp())",
    "mysql": "SELECT UTC_TIMESTAMP(6)",
    "mariadb": "SELECT UTC_TIMESTAMP(6)",
}


def database_now(session: Session) -> datetime.datetime:
    """The database server's current time, naive UTC."""
    sql = _NOW_SQL.get(session.get_bind().dialect.name)
    if sql is None:
        return utcnow()
    value = session.scalar(text(sql))
    if not isinstance(value, datetime.datetime):
        raise TypeError(f"unexpected database time {value!r}")
    return value.replace(tzinfo=None)


def conductors_and_now(
    db: Database,
) -> tuple[list[ConductorState], datetime.datetime]:
    """Every registration plus the database time they are judged at."""
    with db.read() as session:
        rows = session.execute(
            select(Conductor.hostname, Conductor.online,
                   Conductor.heartbeat_at)
        ).all()
        now = database_now(session)
    return [ConductorState(str(r[0]), bool(r[1]), r[2]) for r in rows], now


def register(
    db: Database, name: str, timeout: datetime.timedelta
) -> bool:
    """Take ``name`` for this process unless another live process holds
    it: online with a heartbeat younger than ``timeout``.  False when it
    does (or a concurrent registration won the name).

    A compare-and-set: the row's liveness is checked by the UPDATE that
    takes it, and a new name by the unique index, so of two processes
    registering at once exactly one wins.
    """
    try:
        with db.write() as session:
            now = database_now(session)
            taken = session.execute(
                update(Conductor)
                .where(
                    Conductor.hostname == name,
                    or_(Conductor.online.is_(False),
                        Conductor.heartbeat_at < now - timeout),
                )
                .values(online=True, heartbeat_at=now, updated_at=utcnow())
            )
            if rowcount(taken) == 1:
                return True
            if session.scalar(
                select(Conductor.id).where(Conductor.hostname == name)
            ) is not None:
                return False  # held by a live process
            session.add(Conductor(
                hostname=name, online=True, heartbeat_at=now,
                created_at=utcnow(),
            ))
    except IntegrityError:  # inserted by a concurrent registration
        return False
    return True


def heartbeat(db: Database, name: str) -> bool:
    """Refresh the heartbeat; False when the row has gone (re-register)."""
    with db.write() as session:
        now = database_now(session)
        result = session.execute(
            update(Conductor)
            .where(Conductor.hostname == name)
            .values(online=True, heartbeat_at=now)
        )
        return rowcount(result) == 1


def mark_offline(db: Database, name: str) -> None:
    """Graceful stop: others may take over at once, without waiting."""
    with db.write() as session:
        session.execute(
            update(Conductor)
            .where(Conductor.hostname == name)
            .values(online=False, updated_at=utcnow())
        )


def allocating_affinities(
    db: Database, waiting: bool | None = None,
) -> dict[str | None, int]:
    """How many ``allocating`` allocations each affinity holds;
    ``waiting`` False counts only the ones not waiting in line (True:
    only those)."""
    query = (
        select(Allocation.conductor_affinity, func.count(Allocation.id))
        .where(Allocation.state == ALLOCATING)
        .group_by(Allocation.conductor_affinity)
    )
    if waiting is not None:
        query = query.where(_waiting(waiting))
    with db.read() as session:
        rows = session.execute(query).all()
    return {row[0]: int(row[1]) for row in rows}


def _waiting(waiting: bool) -> ColumnElement[bool]:
    deadline = Allocation.queue_deadline
    return deadline.is_not(None) if waiting else deadline.is_(None)


def allocating_ids(
    db: Database,
    affinity: str | None,
    limit: int | None,
    created_before: datetime.datetime | None = None,
    waiting: bool | None = None,
) -> list[tuple[int, str]]:
    """(id, uuid) of the oldest ``allocating`` rows held by ``affinity``
    (``None``: rows without one), at most ``limit`` of them; ``waiting``
    False leaves out the ones waiting in line (True: only those)."""
    column = Allocation.conductor_affinity
    owner = column.is_(None) if affinity is None else column == affinity
    query = (
        select(Allocation.id, Allocation.uuid)
        .where(Allocation.state == ALLOCATING, owner)
        .order_by(Allocation.id)
    )
    if created_before is not None:
        query = query.where(Allocation.created_at < created_before)
    if waiting is not None:
        query = query.where(_waiting(waiting))
    if limit is not None:
        query = query.limit(limit)
    with db.read() as session:
        return [(int(row[0]), str(row[1])) for row in session.execute(query)]


def take_over(
    db: Database, allocation_id: int, allocation_uuid: str,
    dead: str | None, me: str,
) -> bool:
    """The spec's compare-and-set: move one allocation from ``dead`` to
    ``me``.  False when another conductor won it, it finished, or its
    row is locked right now (by a frozen former owner mid-reservation,
    say): a locked row is skipped, never waited for, so one stuck row
    cannot hold up the take-over of the others; the next round tries it
    again.  A deadlock, lock wait timeout or (Galera) certification
    conflict at COMMIT is a lost race too: False."""
    column = Allocation.conductor_affinity
    owner = column.is_(None) if dead is None else column == dead
    claimable = (Allocation.id == allocation_id,
                 Allocation.uuid == allocation_uuid,
                 Allocation.state == ALLOCATING, owner)
    try:
        with db.write() as session:
            free = session.scalar(
                select(Allocation.id).where(*claimable)
                .with_for_update(skip_locked=True)
            )
            if free is None:
                return False
            result = session.execute(
                update(Allocation)
                .where(*claimable)
                .values(conductor_affinity=me, updated_at=utcnow())
                .execution_options(synchronize_session=False)
            )
            won = rowcount(result) == 1
    except DBAPIError as exc:
        # Galera: another node's process claimed the row first and this
        # commit failed certification; a deadlock or lock wait means the
        # same.  Nothing was written: the race is lost.
        if not is_lost_race(exc):
            raise
        return False
    return won
