"""The selection index ends with the node's id, so a candidate window
is a range of it in id order.

Without the id, PostgreSQL and MariaDB read a window either by walking
the primary key from the pivot past every node that is not free
(deployed ones included) or by reading and sorting every free node of
the class; with it they read the window's rows and stop.  SQLite's
indexes already end with the row id: nothing changes there.

Revision ID: 0014_selection_index_in_id_order
Revises: 0013_allocation_funnel_error
Create Date: 2026-11-26
"""

from __future__ import annotations

from alembic import op

revision = "0014_selection_index_in_id_order"
down_revision = "0013_allocation_funnel_error"
branch_labels = None
depends_on = None

_COLUMNS = ["resource_class", "provision_state", "maintenance"]


def upgrade() -> None:
    """Rebuild the index with the id last."""
    op.drop_index("nodes_selection_idx", table_name="nodes")
    op.create_index("nodes_selection_idx", "nodes", [*_COLUMNS, "id"])


def downgrade() -> None:
    """Rebuild the index without the id."""
    op.drop_index("nodes_selection_idx", table_name="nodes")
    op.create_index("nodes_selection_idx", "nodes", _COLUMNS)
