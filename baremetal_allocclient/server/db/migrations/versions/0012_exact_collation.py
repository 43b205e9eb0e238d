"""Exact text comparison on MariaDB (and MySQL): a binary NO PAD
collation for every table.

The tables had the database's default collation (typically
``utf8mb4_general_ci``: case- and accent-insensitive, trailing spaces
ignored), so project isolation, resource class, property and name
comparisons answered differently than on SQLite and PostgreSQL (issue
20).  Each table is converted, which also makes the collation the
table's default for columns added later.  Rows are kept: a binary
collation only tells apart values the old one took as equal, so no
unique key can break.  Nothing to do on SQLite and PostgreSQL.

Revision ID: 0012_exact_collation
Revises: 0011_node_boot_console
Create Date: 2026-11-25
"""

from __future__ import annotations

from alembic import op

from baremetal_allocclient.server.db.collation import exact_collation

revision = "0012_exact_collation"
down_revision = "0011_node_boot_console"
branch_labels = None
depends_on = None

#: Every table of revision 0011 (alembic's own version table aside).
TABLES = ("nodes", "node_traits", "node_properties", "allocations",
          "conductors", "ports", "node_vifs")


def _convert(collation: str, charset: str = "utf8mb4") -> None:
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} CONVERT TO CHARACTER SET "
                   f"{charset} COLLATE {collation}")


def upgrade() -> None:
    """Convert every table to the exact collation (MySQL family only)."""
    collation = exact_collation(op.get_bind().dialect)
    if collation is not None:
        _convert(collation)


def downgrade() -> None:
    """Back to the database's default collation, ``node_properties``'
    key and text to ``utf8mb4_bin`` as 0007 made them.  Fails on a
    unique key if two rows now differ only in case or trailing spaces."""
    bind = op.get_bind()
    if exact_collation(bind.dialect) is None:
        return
    charset, default = bind.exec_driver_sql(
        "SELECT @@character_set_database, @@collation_database").one()
    _convert(str(default), str(charset))
    op.execute("ALTER TABLE node_properties "
               "MODIFY `key` VARCHAR(255) COLLATE utf8mb4_bin NOT NULL, "
               "MODIFY `text` TEXT COLLATE utf8mb4_bin NULL")
