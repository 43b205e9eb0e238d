"""Ports (a node's NICs by MAC address), the VIFs attached to nodes and
the inspection timestamps of nodes.

Revision ID: 0006_ports
Revises: 0004_mariadb_heartbeat
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_ports"
down_revision = "0004_mariadb_heartbeat"
branch_labels = None
depends_on = None


def _node_id(primary_key: bool = False) -> sa.Column[int]:
    return sa.Column(
        "node_id", sa.Integer(),
        sa.ForeignKey("nodes.id", ondelete="CASCADE"),
        nullable=False, primary_key=primary_key,
    )


_INSPECTION = ("inspection_started_at", "inspection_finished_at")


def upgrade() -> None:
    """Create the ports and node_vifs tables; add the inspection times."""
    for column in _INSPECTION:
        op.add_column("nodes", sa.Column(column, sa.DateTime(),
                                         nullable=True))
    op.create_table(
        "ports",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("address", sa.String(18), nullable=False, unique=True),
        _node_id(),
        sa.Column("extra", sa.JSON(), nullable=False),
        sa.Column("internal_info", sa.JSON(), nullable=False),
        sa.Column("local_link_connection", sa.JSON(), nullable=False),
        sa.Column("pxe_enabled", sa.Boolean(), nullable=False),
        sa.Column("physical_network", sa.String(64), nullable=True),
        sa.Column("is_smartnic", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        mysql_charset="utf8mb4",
    )
    op.create_index("ix_ports_node_id", "ports", ["node_id"])
    op.create_table(
        "node_vifs",
        _node_id(primary_key=True),
        sa.Column("vif_id", sa.String(255), primary_key=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        mysql_charset="utf8mb4",
    )


def downgrade() -> None:
    """Drop both tables and the inspection times."""
    op.drop_table("node_vifs")
    op.drop_index("ix_ports_node_id", table_name="ports")
    op.drop_table("ports")
    with op.batch_alter_table("nodes") as batch:
        for column in _INSPECTION:
            batch.drop_column(column)
