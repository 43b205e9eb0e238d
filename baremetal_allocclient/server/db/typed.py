"""SQLAlchemy names that its 2.0 releases leave untyped, typed here once:
``mypy --strict`` passes on every SQLAlchemy ``setup.cfg`` allows (2.0.20
to 2.1), whose 2.1 types them itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from sqlalchemy.dialects import mysql
from sqlalchemy.ext.compiler import compiles as _compiles
from sqlalchemy.types import TypeEngine

_F = TypeVar("_F", bound=Callable[..., Any])


def compiles(class_: type, *dialects: str) -> Callable[[_F], _F]:
    """``sqlalchemy.ext.compiler.compiles``."""
    decorator: Callable[[_F], _F] = cast(Any, _compiles)(class_, *dialects)
    return decorator


def mysql_varchar(length: int | None, collation: str | None
                  ) -> TypeEngine[str]:
    """``mysql.VARCHAR(length, collation=collation)``."""
    made: TypeEngine[str] = cast(Any, mysql.VARCHAR)(
        length, collation=collation)
    return made


def mysql_text(collation: str | None) -> TypeEngine[str]:
    """``mysql.TEXT(collation=collation)``."""
    made: TypeEngine[str] = cast(Any, mysql.TEXT)(collation=collation)
    return made


def mysql_datetime(fsp: int) -> TypeEngine[Any]:
    """``mysql.DATETIME(fsp=fsp)``."""
    made: TypeEngine[Any] = cast(Any, mysql.DATETIME)(fsp=fsp)
    return made
