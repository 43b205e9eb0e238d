"""Text that compares exactly (case, accents, trailing spaces) on every
database.

SQLite and PostgreSQL compare text byte for byte.  MariaDB's default
collation (``utf8mb4_general_ci``) ignores case and accents and pads
trailing spaces, and even ``utf8mb4_bin`` pads (``'a' = 'a '``), so the
same query would answer differently there: which project sees a node,
which node a resource class or a constraint matches, which names
conflict.  Every text column therefore has a binary, NO PAD collation on
the MySQL family: ``utf8mb4_nopad_bin`` on MariaDB, ``utf8mb4_0900_bin``
on MySQL 8 (which has no ``nopad_bin``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import String, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

from baremetal_allocclient.server.db.typed import mysql_text, mysql_varchar

MARIADB_COLLATION = "utf8mb4_nopad_bin"
MYSQL_COLLATION = "utf8mb4_0900_bin"
_MYSQL_FAMILY = ("mysql", "mariadb")


def exact_collation(dialect: Dialect) -> str | None:
    """The binary NO PAD collation of ``dialect``'s server; None where
    text already compares exactly (SQLite, PostgreSQL).

    A ``mysql+pymysql://`` URL to a MariaDB server has the dialect name
    "mysql": the server itself says which it is (``is_mariadb``)."""
    if dialect.name not in _MYSQL_FAMILY:
        return None
    if getattr(dialect, "is_mariadb", False):
        return MARIADB_COLLATION
    return MYSQL_COLLATION


class ExactString(TypeDecorator[str]):
    """``String(length)`` with :func:`exact_collation` on MySQL/MariaDB."""

    impl = String
    cache_ok = True

    def __init__(self, length: int) -> None:
        super().__init__(length)
        self.length = length

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        collation = exact_collation(dialect)
        if collation is None:
            return String(self.length)
        return mysql_varchar(self.length, collation)


class ExactText(TypeDecorator[str]):
    """``Text`` with :func:`exact_collation` on MySQL/MariaDB."""

    impl = Text
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        collation = exact_collation(dialect)
        if collation is None:
            return Text()
        return mysql_text(collation)
