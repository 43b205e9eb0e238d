"""The hardware interfaces of a node: one column per ``*_interface``.

NULL (every existing row) is the interface's default implementation
(server/logic/interfaces.py).

Revision ID: 0010_node_interfaces
Revises: 0009_allocation_queue
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_node_interfaces"
down_revision = "0009_allocation_queue"
branch_labels = None
depends_on = None

_KINDS = ("bios", "boot", "console", "deploy", "firmware", "inspect",
          "management", "network", "power", "raid", "rescue", "storage",
          "vendor")


def upgrade() -> None:
    """Add the columns (NULL: the default implementation)."""
    for kind in _KINDS:
        op.add_column("nodes", sa.Column(f"{kind}_interface", sa.String(255),
                                         nullable=True))


def downgrade() -> None:
    """Drop the columns."""
    with op.batch_alter_table("nodes") as batch:
        for kind in _KINDS:
            batch.drop_column(f"{kind}_interface")
