"""The change log of allocations (the watch extension).

Every committed change of an allocation leaves one row in
``allocation_changes``, written in the change's own transaction by a
trigger on ``allocations`` (so no write path can forget it: the ORM's,
the driver statements of a create, the Ironic wing's node delete).  A
row is born without a cursor (``seq`` NULL); the sequencer
(``allocation/watch/log.py``) hands committed rows their cursors in a
transaction that holds the one row of ``allocation_change_cursor``, so
cursors are handed out in commit order: a reader that has seen cursor
``n`` has seen every cursor below it.  ``pruned_through`` is the
highest cursor the retention removed (a watch from below it is told to
list again).

An update that changes none of the watched columns (a heartbeat of the
conductor affinity, ``updated_at`` alone) leaves no row.

Revision ID: 0017_allocation_changes
Revises: 0016_allocation_marks
Create Date: 2026-11-29
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

from baremetal_allocclient.server.db.collation import (
    ExactString,
    ExactText,
    exact_collation,
)
from baremetal_allocclient.server.db.typed import mysql_datetime

revision = "0017_allocation_changes"
down_revision = "0016_allocation_marks"
branch_labels = None
depends_on = None

#: Columns copied from the allocation row (NEW or OLD) into the log.
COPIED = ("uuid", "name", "state", "owner", "resource_class",
          "group_name", "last_error", "extra", "traits", "lease_expires_at",
          "queue_deadline")
#: Columns whose change is a change of the allocation (others, such as
#: ``conductor_affinity`` and ``updated_at``, are bookkeeping).
WATCHED = ("state", "node_id", "name", "owner", "resource_class",
           "group_name", "last_error", "extra", "lease_expires_at",
           "queue_deadline")
_JSON = ("extra", "traits")
_INSERT = ("op", "allocation_id", *COPIED, "node_uuid")


def _table_options() -> dict[str, Any]:
    collation = exact_collation(op.get_bind().dialect)
    if collation is None:
        return {}
    return {f"{prefix}_{option}": value
            for prefix in ("mysql", "mariadb")
            for option, value in (("charset", "utf8mb4"),
                                  ("collate", collation))}


def _values(row: str, kind: str) -> str:
    """The VALUES list of a log row for ``row`` (NEW or OLD)."""
    # (Constant names only: nothing of a request is in these texts.)
    copied = ", ".join(f"{row}.{name}" for name in COPIED)
    node = "(SELECT uuid FROM nodes WHERE id = " + row + ".node_id)"  # noqa: S608
    return f"'{kind}', {row}.id, {copied}, {node}"


def _insert(row: str, kind: str) -> str:
    columns = ", ".join(_INSERT)
    return ("INSERT INTO allocation_changes (" + columns  # noqa: S608
            + ") VALUES (" + _values(row, kind) + ")")


def _changed(dialect: str) -> str:
    """SQL true when a watched column differs between OLD and NEW."""
    tests = []
    for name in WATCHED:
        new, old = f"NEW.{name}", f"OLD.{name}"
        if dialect == "postgresql":
            if name in _JSON:
                new, old = f"{new}::text", f"{old}::text"
            tests.append(f"{new} IS DISTINCT FROM {old}")
        elif dialect == "sqlite":
            tests.append(f"{new} IS NOT {old}")
        else:
            tests.append(f"NOT ({new} <=> {old})")
    return " OR ".join(tests)


def _sqlite() -> list[str]:
    return [
        "CREATE TRIGGER allocation_changes_insert AFTER INSERT ON "
        f"allocations BEGIN {_insert('NEW', 'created')}; END",
        "CREATE TRIGGER allocation_changes_update AFTER UPDATE ON "
        f"allocations WHEN {_changed('sqlite')} BEGIN "
        f"{_insert('NEW', 'updated')}; END",
        "CREATE TRIGGER allocation_changes_delete AFTER DELETE ON "
        f"allocations BEGIN {_insert('OLD', 'deleted')}; END",
    ]


def _postgresql() -> list[str]:
    return [
        "CREATE FUNCTION allocation_changes_record() RETURNS trigger AS $$ "
        "BEGIN "
        f"IF TG_OP = 'DELETE' THEN {_insert('OLD', 'deleted')}; "
        "RETURN OLD; END IF; "
        f"IF TG_OP = 'UPDATE' AND NOT ({_changed('postgresql')}) THEN "
        "RETURN NEW; END IF; "
        "IF TG_OP = 'INSERT' THEN "
        f"{_insert('NEW', 'created')}; "
        f"ELSE {_insert('NEW', 'updated')}; END IF; "
        "RETURN NEW; END $$ LANGUAGE plpgsql",
        "CREATE TRIGGER allocation_changes_record AFTER INSERT OR UPDATE "
        "OR DELETE ON allocations FOR EACH ROW EXECUTE FUNCTION "
        "allocation_changes_record()",
    ]


def _mysql() -> list[str]:
    return [
        "CREATE TRIGGER allocation_changes_insert AFTER INSERT ON "
        f"allocations FOR EACH ROW {_insert('NEW', 'created')}",
        "CREATE TRIGGER allocation_changes_update AFTER UPDATE ON "
        f"allocations FOR EACH ROW BEGIN IF {_changed('mysql')} THEN "
        f"{_insert('NEW', 'updated')}; END IF; END",
        "CREATE TRIGGER allocation_changes_delete AFTER DELETE ON "
        f"allocations FOR EACH ROW {_insert('OLD', 'deleted')}",
    ]


def triggers(dialect: str) -> list[str]:
    """The statements creating the triggers on ``dialect``."""
    if dialect == "sqlite":
        return _sqlite()
    if dialect == "postgresql":
        return _postgresql()
    return _mysql()


def upgrade() -> None:
    """Create the log, its cursor row and the triggers."""
    precise = sa.DateTime().with_variant(mysql_datetime(6), "mysql",
                                         "mariadb")
    op.create_table(
        "allocation_changes",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("seq", sa.BigInteger(), nullable=True),
        sa.Column("sequenced_at", precise, nullable=True),
        sa.Column("op", ExactString(8), nullable=False),
        sa.Column("allocation_id", sa.Integer(), nullable=False),
        sa.Column("uuid", ExactString(36), nullable=False),
        sa.Column("name", ExactString(255), nullable=True),
        sa.Column("state", ExactString(15), nullable=False),
        sa.Column("node_uuid", ExactString(36), nullable=True),
        sa.Column("owner", ExactString(255), nullable=True),
        sa.Column("resource_class", ExactString(80), nullable=True),
        sa.Column("group_name", ExactString(255), nullable=True),
        sa.Column("last_error", ExactText(), nullable=True),
        sa.Column("extra", sa.JSON(), nullable=True),
        sa.Column("traits", sa.JSON(), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(), nullable=True),
        sa.Column("queue_deadline", sa.DateTime(), nullable=True),
        sa.UniqueConstraint("seq", name="allocation_changes_seq_key"),
        sqlite_autoincrement=True,
        **_table_options(),
    )
    op.create_table(
        "allocation_change_cursor",
        sa.Column("id", sa.Integer(), primary_key=True,
                  autoincrement=False),
        sa.Column("last_seq", sa.BigInteger(), nullable=False),
        sa.Column("pruned_through", sa.BigInteger(), nullable=False),
        **_table_options(),
    )
    op.execute("INSERT INTO allocation_change_cursor "
               "(id, last_seq, pruned_through) VALUES (1, 0, 0)")
    for statement in triggers(op.get_bind().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    """Drop the triggers and the log."""
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute("DROP TRIGGER allocation_changes_record ON allocations")
        op.execute("DROP FUNCTION allocation_changes_record()")
    else:
        for kind in ("insert", "update", "delete"):
            op.execute(f"DROP TRIGGER allocation_changes_{kind}")
    op.drop_table("allocation_change_cursor")
    op.drop_table("allocation_changes")
