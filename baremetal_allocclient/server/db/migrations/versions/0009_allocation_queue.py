"""Waiting in line: the queue deadline of an allocation.

An allocation created with the queue extension has ``queue_deadline``
set: it stays ``allocating`` until a matching node is free or the
deadline passes.  NULL (every existing row) is an ordinary allocation.
The index serves the questions the queue asks: who waits in this
resource class, in arrival (id) order.

Revision ID: 0009_allocation_queue
Revises: 0008_node_fields
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_allocation_queue"
down_revision = "0008_node_fields"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the column and its index."""
    op.add_column("allocations",
                  sa.Column("queue_deadline", sa.DateTime(), nullable=True))
    op.create_index("allocations_queue_idx", "allocations",
                    ["state", "resource_class", "queue_deadline"])


def downgrade() -> None:
    """Drop the index and the column."""
    op.drop_index("allocations_queue_idx", table_name="allocations")
    with op.batch_alter_table("allocations") as batch:
        batch.drop_column("queue_deadline")
