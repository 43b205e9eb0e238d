"""Sub-second heartbeats on ``mariadb://`` URLs too.

0002 gave the heartbeat ``DATETIME(6)`` for the dialect named "mysql"
only; through a ``mariadb+pymysql://`` URL (dialect "mariadb") the column
became a whole-second ``DATETIME``.  Idempotent on schemas that already
have the precision; nothing to do on SQLite and PostgreSQL.

Revision ID: 0004_mariadb_heartbeat
Revises: 0003_allocation_ids
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from baremetal_allocclient.server.db.typed import mysql_datetime

revision = "0004_mariadb_heartbeat"
down_revision = "0003_allocation_ids"
branch_labels = None
depends_on = None

_MYSQL_FAMILY = ("mysql", "mariadb")


def upgrade() -> None:
    """Widen the heartbeat to microseconds on MySQL and MariaDB."""
    if op.get_bind().dialect.name not in _MYSQL_FAMILY:
        return
    op.alter_column(
        "conductors", "heartbeat_at",
        existing_type=sa.DateTime(), type_=mysql_datetime(6),
        existing_nullable=False,
    )


def downgrade() -> None:
    """Nothing: the wider column is what 0002 meant."""
