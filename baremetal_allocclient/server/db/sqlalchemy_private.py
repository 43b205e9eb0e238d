"""Every use of SQLAlchemy beyond its public API, in one place.

The driver-level statements (``db.driver_statements``) run on a pooled
connection without SQLAlchemy's ``Connection`` around it, so they do
themselves three things that only SQLAlchemy's ``Connection`` does, with
SQLAlchemy's own methods, which are not its public API:

* ``Pool._invalidate``: a lost connection is discarded and every
  connection the pool handed out before it is replaced;
* ``_ConnectionFairy._close_special``: a connection whose transaction
  the caller ended goes back to the pool without another rollback;
* ``SQLCompiler._process_parameters_for_postcompile``: an ``IN`` list's
  parameter is expanded into the SQL, as SQLAlchemy does before it runs
  the statement.

Each is checked when this module is imported: present, and with the
signature this code was written against, on SQLAlchemy
2.0.20 to 2.1.9 (``setup.cfg`` bounds SQLAlchemy below 2.2).  The tests
of ``unit/server/db/test_sqlalchemy_private.py`` name each piece and fail
by its name when it changes.  When one is missing or changed
(:data:`MISSING` not empty), or ``BAREMETAL_ALLOC_SQLALCHEMY_PUBLIC`` is
set to 1, :data:`USABLE` is False and the server runs on SQLAlchemy's
public API only: ``Database.write_connection`` and
``statement_connection`` hand out SQLAlchemy ``Connection`` objects and
every driver statement runs through ``Connection.execute`` (its cost:
``doc/source/internals/private-apis.rst``, "SQLAlchemy, CPython and
glibc").  The functions below are called only while :data:`USABLE` is
True.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable
from typing import Any, cast

from sqlalchemy.pool import Pool, PoolProxiedConnection
from sqlalchemy.sql import compiler

LOG = logging.getLogger(__name__)

#: Set to ``1``: run on the public API even where the private pieces are
#: there (what the tests and the benchmarks of the fallback do).
PUBLIC_ONLY_VARIABLE = "BAREMETAL_ALLOC_SQLALCHEMY_PUBLIC"


def _parameters(function: Any) -> tuple[str, ...] | None:
    """The names of ``function``'s parameters; None when it is not one."""
    try:
        return tuple(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return None


def _check_pool_invalidate() -> bool:
    return _parameters(getattr(Pool, "_invalidate", None)) == (
        "self", "connection", "exception", "_checkin")


def _fairy_class() -> Any:
    from sqlalchemy.pool import base  # (the class is not exported)

    return getattr(base, "_ConnectionFairy", None)


def _check_close_special() -> bool:
    fairy = _fairy_class()
    return fairy is not None and issubclass(fairy, PoolProxiedConnection) \
        and _parameters(getattr(fairy, "_close_special", None)) == (
            "self", "transaction_reset")


def _check_postcompile() -> bool:
    expanded = getattr(compiler, "ExpandedState", None)
    fields = getattr(expanded, "_fields", ())
    return _parameters(getattr(
        compiler.SQLCompiler, "_process_parameters_for_postcompile", None)
    ) == ("self", "parameters", "_populate_self") and {
        "statement", "parameters", "processors", "positiontup"} <= set(fields)


#: Each private piece, by name, and the check that it is there as this
#: code uses it.
PIECES: dict[str, Callable[[], bool]] = {
    "Pool._invalidate": _check_pool_invalidate,
    "_ConnectionFairy._close_special": _check_close_special,
    "SQLCompiler._process_parameters_for_postcompile": _check_postcompile,
}


def missing() -> list[str]:
    """The pieces that are missing or not as this code uses them."""
    return [name for name, check in PIECES.items() if not check()]


#: The pieces this SQLAlchemy lacks (or has changed), at import.
MISSING = missing()
#: True: the driver-level path runs (every piece is there, and the
#: public API is not asked for); False: the public API only.
USABLE = not MISSING and os.environ.get(PUBLIC_ONLY_VARIABLE) != "1"
if MISSING:
    LOG.warning("This SQLAlchemy lacks %s: statements run through its "
                "public Connection API (slower)", ", ".join(MISSING))


def invalidate_pool(pool: Pool, connection: PoolProxiedConnection,
                    error: BaseException) -> None:
    """A lost connection: invalidated, and every connection the pool
    handed out before it replaced on its next checkout (what SQLAlchemy's
    ``Connection`` does on a disconnect)."""
    pool._invalidate(connection, error)


def check_in_ended(connection: PoolProxiedConnection) -> None:
    """Give a connection whose transaction the caller ended back to the
    pool, without the pool's rollback (as SQLAlchemy's ``Connection``
    gives its own back after a commit)."""
    cast(Any, connection)._close_special(transaction_reset=True)


def expanded(compiled: compiler.SQLCompiler, parameters: dict[str, Any]
             ) -> compiler.ExpandedState:
    """The SQL and parameters of ``compiled`` with its ``IN`` lists
    expanded for ``parameters`` (SQLAlchemy's own step before it runs a
    statement)."""
    return compiled._process_parameters_for_postcompile(
        compiled.construct_params(parameters))

