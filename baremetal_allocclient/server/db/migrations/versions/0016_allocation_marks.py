"""Groups and leases in fields of their own, out of ``extra``.

Before this revision a group member's ``extra`` held
``baremetal_alloc_group`` (the group's name) and
``baremetal_alloc_group_size`` (its size, a number), and a leased
allocation's held ``baremetal_alloc:lease_expires_at`` and
``baremetal_alloc:lease``: every client read them, and strict ones
(gophercloud's ``map[string]string``, Terraform's drift check) failed or
saw changes nobody made.  They move to ``group_name``, ``group_size``,
``lease_expires_at`` and ``lease_duration``, shown only to requests that
opt into the extensions; ``extra`` keeps what the user wrote.

Every row is read and each key moved only when its value can be stored
in its field (a group name that is a string of at most 255 characters, a
size that is a whole number, an ISO 8601 end, a duration text of at most
64 characters); a value that cannot stays in ``extra`` as it was, so
nothing is lost (the server never read such a value as a group or a
lease).  The downgrade puts them back into ``extra`` as they were
written (the size as a number).

Revision ID: 0016_allocation_marks
Revises: 0015_chassis
Create Date: 2026-11-29
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0016_allocation_marks"
down_revision = "0015_chassis"
branch_labels = None
depends_on = None

GROUP_KEY = "baremetal_alloc_group"
SIZE_KEY = "baremetal_alloc_group_size"
EXPIRES_KEY = "baremetal_alloc:lease_expires_at"
DURATION_KEY = "baremetal_alloc:lease"
#: Rows read per query.
PAGE = 500

_allocations = sa.table(
    "allocations", sa.column("id", sa.Integer), sa.column("extra", sa.JSON),
    sa.column("group_name", sa.String), sa.column("group_size", sa.Integer),
    sa.column("lease_expires_at", sa.DateTime),
    sa.column("lease_duration", sa.String))


def upgrade() -> None:
    """Add the fields and their index, then move the keys."""
    with op.batch_alter_table("allocations") as batch:
        batch.add_column(sa.Column("group_name", sa.String(255),
                                   nullable=True))
        batch.add_column(sa.Column("group_size", sa.Integer(),
                                   nullable=True))
        batch.add_column(sa.Column("lease_expires_at", sa.DateTime(),
                                   nullable=True))
        batch.add_column(sa.Column("lease_duration", sa.String(64),
                                   nullable=True))
    op.create_index("allocations_lease_idx", "allocations",
                    ["lease_expires_at"])
    _rewrite(_moved_out)


def downgrade() -> None:
    """Move the fields back into ``extra``, then drop them."""
    _rewrite(_moved_back)
    op.drop_index("allocations_lease_idx", table_name="allocations")
    with op.batch_alter_table("allocations") as batch:
        for name in ("lease_duration", "lease_expires_at", "group_size",
                     "group_name"):
            batch.drop_column(name)


def _rewrite(change: Any) -> None:
    """Apply ``change`` (row -> values to set, or None) to every row, a
    page at a time in id order."""
    conn = op.get_bind()
    query = sa.select(_allocations).where(
        _allocations.c.id > sa.bindparam("after")).order_by(
        _allocations.c.id).limit(PAGE)
    after = 0
    while True:
        rows = conn.execute(query, {"after": after}).mappings().all()
        for row in rows:
            values = change(row)
            if values is not None:
                conn.execute(sa.update(_allocations).where(
                    _allocations.c.id == row["id"]).values(**values))
        if len(rows) < PAGE:
            return
        after = rows[-1]["id"]


def _extra(row: Any) -> dict[str, Any]:
    stored = row["extra"]
    value = json.loads(stored) if isinstance(stored, (str, bytes)) \
        else stored
    return value if isinstance(value, dict) else {}


def _end(text: Any) -> datetime.datetime | None:
    """A lease end as naive UTC, or None when it is not ISO 8601."""
    if not isinstance(text, str):
        return None
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.timezone.utc).replace(
            tzinfo=None)
    return moment


def _moved_out(row: Any) -> dict[str, Any] | None:
    extra = _extra(row)
    values: dict[str, Any] = {}
    name = extra.get(GROUP_KEY)
    if isinstance(name, str) and len(name) <= 255:
        values["group_name"] = extra.pop(GROUP_KEY)
        size = extra.get(SIZE_KEY)
        if isinstance(size, int) and not isinstance(size, bool) and (
                0 < size < 2**31):
            values["group_size"] = extra.pop(SIZE_KEY)
    end = _end(extra.get(EXPIRES_KEY))
    if end is not None:
        extra.pop(EXPIRES_KEY)
        values["lease_expires_at"] = end
        duration = extra.get(DURATION_KEY)
        if isinstance(duration, str) and len(duration) <= 64:
            values["lease_duration"] = extra.pop(DURATION_KEY)
    if not values:
        return None
    return {**values, "extra": extra}


def _moved_back(row: Any) -> dict[str, Any] | None:
    extra = _extra(row)
    if row["group_name"] is not None:
        extra[GROUP_KEY] = row["group_name"]
        if row["group_size"] is not None:
            extra[SIZE_KEY] = row["group_size"]
    end = row["lease_expires_at"]
    if end is not None:
        if isinstance(end, str):  # SQLite hands back its text
            end = datetime.datetime.fromisoformat(end)
        extra[EXPIRES_KEY] = end.strftime("%Y-%m-%dT%H:%M:%SZ")
        if row["lease_duration"] is not None:
            extra[DURATION_KEY] = row["lease_duration"]
    if row["group_name"] is None and end is None:
        return None
    return {"extra": extra}
