"""Chassis (Ironic's ``/v1/chassis``) and the node's ``chassis_uuid``.

The node names its chassis by UUID, as the API shows it.  There is no
foreign key: SQLite cannot add one to an existing table without
rebuilding ``nodes`` (which would cascade-delete its ports, traits and
VIFs while foreign keys are enforced).  The services keep the link
sound instead: a node's chassis is read under a row lock before it is
set, and a chassis is deleted only under that lock when no node names
it (``ironic/chassis_rows.py``).

Revision ID: 0015_chassis
Revises: 0014_selection_index_in_id_order
Create Date: 2026-11-29
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

from baremetal_allocclient.server.db.collation import (
    ExactString,
    exact_collation,
)

revision = "0015_chassis"
down_revision = "0014_selection_index_in_id_order"
branch_labels = None
depends_on = None


def _table_options() -> dict[str, Any]:
    """The exact collation as the new table's default (as 0012 made every
    other table's) on MariaDB and MySQL."""
    collation = exact_collation(op.get_bind().dialect)
    if collation is None:
        return {}
    # (A "mariadb://" URL's dialect reads its own prefix.)
    return {f"{prefix}_{option}": value
            for prefix in ("mysql", "mariadb")
            for option, value in (("charset", "utf8mb4"),
                                  ("collate", collation))}


def upgrade() -> None:
    """Create ``chassis`` and add ``nodes.chassis_uuid`` (indexed)."""
    op.create_table(
        "chassis",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("uuid", ExactString(36), nullable=False),
        sa.Column("description", ExactString(255), nullable=True),
        sa.Column("extra", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.UniqueConstraint("uuid"),
        **_table_options(),
    )
    op.add_column("nodes",
                  sa.Column("chassis_uuid", ExactString(36), nullable=True))
    op.create_index("ix_nodes_chassis_uuid", "nodes", ["chassis_uuid"])


def downgrade() -> None:
    """Drop both (a node's chassis is forgotten)."""
    op.drop_index("ix_nodes_chassis_uuid", table_name="nodes")
    op.drop_column("nodes", "chassis_uuid")
    op.drop_table("chassis")
