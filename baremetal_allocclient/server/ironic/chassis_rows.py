"""Chassis rows: finding one (locked in a write), one page of a
listing, whether a node names it.  Every function takes the caller's
session and opens no transaction.

A node names its chassis by UUID without a foreign key (migration
``0015_chassis``): whoever sets a node's chassis reads that chassis with
:func:`find_chassis` in a write, which locks its row, and a chassis is
deleted under the same lock only when no node names it, so neither can
slip past the other.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from baremetal_allocclient.server.db import paging
from baremetal_allocclient.server.db.engine import WRITE
from baremetal_allocclient.server.db.models import Chassis, Node
from baremetal_allocclient.server.domain import identifiers
from baremetal_allocclient.server.domain.errors import Invalid, NotFound
from baremetal_allocclient.server.domain.paging import Page


def missing_chassis(ident: str) -> NotFound:
    """Ironic's ``ChassisNotFound``."""
    return NotFound(f"Chassis {ident} could not be found.")


def find_chassis(session: Session, ident: str) -> Chassis:
    """The chassis with this UUID (its row locked in a write); 404 when
    there is none (a malformed UUID included, as Ironic's lookup)."""
    query = select(Chassis).where(
        Chassis.uuid == identifiers.canonical_uuid(ident))
    if session.info.get(WRITE):
        query = query.with_for_update().execution_options(
            populate_existing=True)
    chassis: Chassis | None = session.scalars(query).first()
    if chassis is None:
        raise missing_chassis(ident)
    return chassis


def chassis_of_node(session: Session, ident: str | None) -> str | None:
    """The UUID a node's ``chassis_uuid`` names, its row locked; a
    missing chassis is a 400 (Ironic's ``ChassisNotFound`` turned into
    a bad request for node requests)."""
    if not ident:
        return None
    try:
        return find_chassis(session, ident).uuid
    except NotFound as exc:
        raise Invalid(exc.message) from None


def has_nodes(session: Session, chassis: Chassis) -> bool:
    """Whether any node names ``chassis``."""
    count = session.scalar(select(func.count()).select_from(Node).where(
        Node.chassis_uuid == chassis.uuid))
    return bool(count)


def page_of_chassis(session: Session, page: Page, marker: str | None
                    ) -> list[Chassis]:
    """One page of every chassis, after the ``marker`` chassis (404
    when missing)."""
    after: tuple[Any, int] | None = None
    if marker is not None:
        found = find_chassis(session, marker)
        after = (getattr(found, page.sort_key), found.id)
    query = paging.order_and_page(
        select(Chassis), page, getattr(Chassis, page.sort_key), Chassis.id,
        after)
    return list(session.scalars(query))


def add_chassis(session: Session, chassis: Chassis) -> None:
    """Insert a new chassis now (a uniqueness violation raised here)."""
    session.add(chassis)
    session.flush()
