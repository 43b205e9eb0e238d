"""Node and port fields of Ironic's API 1.83 to 1.111: the nodes'
``parent_node``, ``disable_power_off`` and ``instance_name``; the ports'
``name``, ``description``, ``vendor``, ``category`` and
``available_for_dynamic_portgroup``.

Revision ID: 0008_node_fields
Revises: 0007_node_constraints
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_node_fields"
down_revision = "0007_node_constraints"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the columns; existing nodes get Ironic's defaults."""
    op.add_column("nodes",
                  sa.Column("parent_node", sa.String(36), nullable=True))
    op.add_column("nodes", sa.Column(
        "disable_power_off", sa.Boolean(), nullable=False,
        server_default=sa.false()))
    op.add_column("nodes",
                  sa.Column("instance_name", sa.String(255), nullable=True))
    with op.batch_alter_table("ports") as batch:
        batch.add_column(sa.Column("name", sa.String(255), nullable=True))
        batch.add_column(
            sa.Column("description", sa.String(255), nullable=True))
        batch.add_column(sa.Column("vendor", sa.String(32), nullable=True))
        batch.add_column(sa.Column("category", sa.String(80), nullable=True))
        batch.add_column(sa.Column(
            "available_for_dynamic_portgroup", sa.Boolean(), nullable=False,
            server_default=sa.true()))
        batch.create_unique_constraint("uq_ports_name", ["name"])


def downgrade() -> None:
    """Drop the columns."""
    with op.batch_alter_table("ports") as batch:
        batch.drop_constraint("uq_ports_name", type_="unique")
        for column in ("available_for_dynamic_portgroup", "category",
                       "vendor", "description", "name"):
            batch.drop_column(column)
    with op.batch_alter_table("nodes") as batch:
        batch.drop_column("instance_name")
        batch.drop_column("disable_power_off")
        batch.drop_column("parent_node")
