"""Node constraints: node shards, normalized node properties and the
constraints an allocation was created with.

``node_properties`` holds one row per top-level key of a node's
``properties`` (its text and, for numbers, its numeric value), so
property constraints are index lookups on every database instead of
dialect-specific JSON expressions.  Existing nodes are filled in here.

Revision ID: 0007_node_constraints
Revises: 0006_ports
Create Date: 2026-11-24
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

from baremetal_allocclient.server.db import node_properties
from baremetal_allocclient.server.db.typed import mysql_text, mysql_varchar

revision = "0007_node_constraints"
down_revision = "0006_ports"
branch_labels = None
depends_on = None

_KEY = sa.String(255).with_variant(
    mysql_varchar(255, "utf8mb4_bin"), "mysql", "mariadb"
)
_TEXT = sa.Text().with_variant(
    mysql_text("utf8mb4_bin"), "mysql", "mariadb"
)


def upgrade() -> None:
    """Add the columns and the table; normalize existing properties."""
    op.add_column("nodes", sa.Column("shard", sa.String(255), nullable=True))
    op.add_column("allocations",
                  sa.Column("constraints", sa.JSON(), nullable=True))
    table = op.create_table(
        "node_properties",
        sa.Column("node_id", sa.Integer(),
                  sa.ForeignKey("nodes.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("key", _KEY, primary_key=True),
        sa.Column("text", _TEXT, nullable=True),
        sa.Column("number", sa.Double(), nullable=True),
        mysql_charset="utf8mb4",
    )
    bind = op.get_bind()
    rows: list[dict[str, Any]] = []
    for node_id, props in bind.execute(
        sa.text("SELECT id, properties FROM nodes")
    ):
        if isinstance(props, str):
            props = json.loads(props)
        rows += node_properties.rows_for(int(node_id), props or {})
    if rows:
        op.bulk_insert(table, rows)


def downgrade() -> None:
    """Drop the table and the columns."""
    op.drop_table("node_properties")
    with op.batch_alter_table("allocations") as batch:
        batch.drop_column("constraints")
    with op.batch_alter_table("nodes") as batch:
        batch.drop_column("shard")
