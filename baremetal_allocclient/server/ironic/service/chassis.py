"""Chassis: list, find, create, change and delete them.

Each function opens its own transaction.  A chassis that nodes name is
not deleted (Ironic's ``ChassisNotEmpty``, a 400).
"""

from __future__ import annotations

from typing import Any

from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.db.engine import (
    Database,
    duplicates_refused,
)
from baremetal_allocclient.server.db.models import Chassis, utcnow
from baremetal_allocclient.server.domain import patching
from baremetal_allocclient.server.domain.errors import Conflict, Invalid
from baremetal_allocclient.server.domain.paging import Page
from baremetal_allocclient.server.ironic import chassis_rows

#: The fields a chassis has, and a PATCH may name.
FIELDS = ("uuid", "extra", "description")


def list_page(db: Database, page: Page, marker: str | None
              ) -> list[Chassis]:
    """One page of chassis after the ``marker`` one."""
    with db.read() as session:
        return chassis_rows.page_of_chassis(session, page, marker)


def show(db: Database, ident: str) -> Chassis:
    """The chassis ``ident`` names (404 when missing)."""
    with db.read() as session:
        return chassis_rows.find_chassis(session, ident)


def create(db: Database, values: dict[str, Any], uuid: str) -> Chassis:
    """Store a chassis with the checked body ``values``; 409 when
    ``uuid`` is taken."""
    def duplicate() -> Conflict:
        return Conflict(f"A chassis with UUID {uuid} already exists.")

    with duplicates_refused(duplicate), db.write() as session:
        chassis = Chassis(uuid=uuid, description=values.get("description"),
                          extra=values.get("extra") or {},
                          created_at=utcnow())
        chassis_rows.add_chassis(session, chassis)
        return chassis


def update(db: Database, ident: str, patch: list[dict[str, Any]]
           ) -> Chassis:
    """Apply a JSON patch (its paths checked by the caller) to the
    description and ``extra``; the UUID cannot change."""
    with db.write() as session:
        chassis = chassis_rows.find_chassis(session, ident)
        before = {"uuid": chassis.uuid, "description": chassis.description,
                  "extra": dict(chassis.extra or {})}
        after = patching.apply(before, patch)
        if not isinstance(after, dict):
            raise Invalid("Invalid patch: the chassis must stay an object")
        schemas.validate(after, schemas.CHASSIS, "Schema error for chassis")
        if after.get("uuid") != chassis.uuid:
            raise Invalid("Cannot overwrite UUID for an existing Chassis.")
        changed = False
        for key in ("description", "extra"):
            value = after.get(key)
            value = {} if key == "extra" and value is None else value
            if value != before[key]:
                setattr(chassis, key, value)
                changed = True
        if changed:
            chassis.updated_at = utcnow()
        session.flush()
        return chassis


def delete(db: Database, ident: str) -> None:
    """Delete a chassis no node names (400 otherwise, 404 when
    missing)."""
    with db.write() as session:
        chassis = chassis_rows.find_chassis(session, ident)
        if chassis_rows.has_nodes(session, chassis):
            raise Invalid(f"Cannot complete the requested action because "
                          f"chassis {chassis.uuid} contains nodes.")
        session.delete(chassis)
