"""An allocation's ``funnel_error``: why it failed, with the selection
funnel, for clients that opted into the constraints extension.

``last_error`` keeps Ironic's text, byte for byte, for every other
client.  Existing rows get NULL (their ``last_error`` is shown to
everyone).

Revision ID: 0013_allocation_funnel_error
Revises: 0012_exact_collation
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_allocation_funnel_error"
down_revision = "0012_exact_collation"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the column."""
    op.add_column("allocations", sa.Column("funnel_error", sa.Text(),
                                           nullable=True))


def downgrade() -> None:
    """Drop the column."""
    with op.batch_alter_table("allocations") as batch:
        batch.drop_column("funnel_error")
