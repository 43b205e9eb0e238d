"""Initial schema: nodes, node_traits, allocations.

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_initial"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the first schema."""
    op.create_table(
        "nodes",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("name", sa.String(255), nullable=True, unique=True),
        sa.Column("driver", sa.String(255), nullable=False),
        sa.Column("resource_class", sa.String(80), nullable=True),
        sa.Column("provision_state", sa.String(15), nullable=False),
        sa.Column("target_provision_state", sa.String(15), nullable=True),
        sa.Column("provision_updated_at", sa.DateTime(), nullable=True),
        sa.Column("power_state", sa.String(15), nullable=True),
        sa.Column("target_power_state", sa.String(15), nullable=True),
        sa.Column("maintenance", sa.Boolean(), nullable=False),
        sa.Column("maintenance_reason", sa.Text(), nullable=True),
        sa.Column("fault", sa.String(255), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("owner", sa.String(255), nullable=True),
        sa.Column("lessee", sa.String(255), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("instance_uuid", sa.String(36), nullable=True, unique=True),
        sa.Column("allocation_id", sa.Integer(), nullable=True, unique=True),
        sa.Column("instance_info", sa.JSON(), nullable=False),
        sa.Column("properties", sa.JSON(), nullable=False),
        sa.Column("extra", sa.JSON(), nullable=False),
        sa.Column("driver_info", sa.JSON(), nullable=False),
        sa.Column("driver_internal_info", sa.JSON(), nullable=False),
        sa.Column("network_data", sa.JSON(), nullable=False),
        sa.Column("automated_clean", sa.Boolean(), nullable=True),
        sa.Column("protected", sa.Boolean(), nullable=False),
        sa.Column("protected_reason", sa.Text(), nullable=True),
        sa.Column("retired", sa.Boolean(), nullable=False),
        sa.Column("retired_reason", sa.Text(), nullable=True),
        sa.Column("conductor_group", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
    )
    op.create_index(
        "nodes_selection_idx",
        "nodes",
        ["resource_class", "provision_state", "maintenance"],
    )
    op.create_index("nodes_owner_idx", "nodes", ["owner"])
    op.create_index("nodes_lessee_idx", "nodes", ["lessee"])
    op.create_table(
        "node_traits",
        sa.Column(
            "node_id",
            sa.Integer(),
            sa.ForeignKey("nodes.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("trait", sa.String(255), primary_key=True),
    )
    op.create_index("node_traits_trait_idx", "node_traits", ["trait"])
    op.create_table(
        "allocations",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("name", sa.String(255), nullable=True, unique=True),
        sa.Column(
            "node_id",
            sa.Integer(),
            sa.ForeignKey("nodes.id", ondelete="SET NULL"),
            nullable=True,
        ),
        sa.Column("state", sa.String(15), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("resource_class", sa.String(80), nullable=True),
        sa.Column("traits", sa.JSON(), nullable=False),
        sa.Column("candidate_nodes", sa.JSON(), nullable=False),
        sa.Column("extra", sa.JSON(), nullable=False),
        sa.Column("owner", sa.String(255), nullable=True),
        sa.Column("conductor_affinity", sa.String(255), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
    )
    op.create_index(
        "ix_allocations_node_id", "allocations", ["node_id"]
    )
    op.create_index(
        "allocations_state_affinity_idx",
        "allocations",
        ["state", "conductor_affinity"],
    )
    op.create_index(
        "allocations_resource_class_idx", "allocations", ["resource_class"]
    )
    op.create_index("allocations_owner_idx", "allocations", ["owner"])
