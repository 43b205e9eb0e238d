"""A node's ``console_enabled``, ``boot_mode`` and ``secure_boot``.

Ironic takes all three on node create and shows them back
(``boot_mode``/``secure_boot`` from API 1.75).  Existing rows get
Ironic's defaults: console disabled, boot mode and secure boot unknown
(NULL).

Revision ID: 0011_node_boot_console
Revises: 0010_node_interfaces
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_node_boot_console"
down_revision = "0010_node_interfaces"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the columns."""
    op.add_column("nodes", sa.Column(
        "console_enabled", sa.Boolean(), nullable=False,
        server_default=sa.false()))
    op.add_column("nodes", sa.Column("boot_mode", sa.String(255),
                                     nullable=True))
    op.add_column("nodes", sa.Column("secure_boot", sa.Boolean(),
                                     nullable=True))


def downgrade() -> None:
    """Drop the columns."""
    with op.batch_alter_table("nodes") as batch:
        for column in ("secure_boot", "boot_mode", "console_enabled"):
            batch.drop_column(column)
