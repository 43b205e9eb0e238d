"""Allocation ids are never reused on SQLite (AUTOINCREMENT).

Without it SQLite hands the id of the newest deleted allocation to the
next one, and anything still holding the old id (a worker, a take-over)
would act on the new allocation.  PostgreSQL sequences and InnoDB's
persistent auto-increment never reuse an id, so only SQLite changes.

Revision ID: 0003_allocation_ids
Revises: 0002_conductors
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op

revision = "0003_allocation_ids"
down_revision = "0002_conductors"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Rebuild the allocations table with AUTOINCREMENT (SQLite only)."""
    if op.get_bind().dialect.name != "sqlite":
        return
    with op.batch_alter_table(
        "allocations", recreate="always",
        table_kwargs={"sqlite_autoincrement": True},
    ):
        pass


def downgrade() -> None:
    """Rebuild the allocations table without AUTOINCREMENT (SQLite)."""
    if op.get_bind().dialect.name != "sqlite":
        return
    with op.batch_alter_table("allocations", recreate="always"):
        pass
