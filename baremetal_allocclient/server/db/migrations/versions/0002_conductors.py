"""Conductors: one row per ``serve`` process, with its heartbeat.

Revision ID: 0002_conductors
Revises: 0001_initial
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from baremetal_allocclient.server.db.typed import mysql_datetime

revision = "0002_conductors"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the conductors table."""
    op.create_table(
        "conductors",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("hostname", sa.String(255), nullable=False, unique=True),
        sa.Column("online", sa.Boolean(), nullable=False),
        sa.Column(
            "heartbeat_at",
            sa.DateTime().with_variant(mysql_datetime(6), "mysql"),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        mysql_charset="utf8mb4",
    )


def downgrade() -> None:
    """Drop the conductors table."""
    op.drop_table("conductors")
