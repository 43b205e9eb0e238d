"""Input every database stores exactly as sent, checked before any SQL.

PostgreSQL refuses NUL characters in text and ``NaN``/``Infinity`` in
JSON; MariaDB's JSON columns refuse non-finite numbers too; no driver can
encode a lone surrogate as UTF-8; SQLite stores all of them and answers
them back.  So the same request would be a 201 on one database and a
database error on another.  Instead these values are refused with a 400
wherever a client can put them: the path, query parameters, and every
string, key and number of a JSON body (``1e400`` included, which
Python's ``json`` reads as infinity).

Pure functions; the application calls :func:`check_url` before routing,
:func:`loads` parses every request body, and ``enroll`` checks each
inventory entry with :func:`value_problem`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from baremetal_allocclient.server.api.errors import bad_request

_SURROGATES = range(0xD800, 0xE000)


class Unstorable(ValueError):
    """A value no database stores faithfully (the message says why)."""


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored, or None when it can (pure)."""
    if "\x00" in value:
        return "NUL characters (\\u0000) are not allowed"
    if not value.isascii() and any(ord(c) in _SURROGATES for c in value):
        return "unpaired surrogate characters are not allowed"
    return None


def _reject_constant(name: str) -> float:
    raise Unstorable(f"{name} is not allowed, numbers must be finite")


def _finite_float(literal: str) -> float:
    number = float(literal)
    if not math.isfinite(number):
        raise Unstorable(f"{literal[:40]} is out of range, numbers must be "
                         f"finite")
    return number


def value_problem(value: Any) -> str | None:
    """Why a parsed document (JSON or YAML) cannot be stored: a string or
    key with a NUL or a lone surrogate, or a non-finite number; None when
    it can (pure, iterative: no recursion limit)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return problem
        elif isinstance(item, float) and not math.isfinite(item):
            return f"{item} is not allowed, numbers must be finite"
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return None


#: ``json.loads`` with these hooks would build a decoder for each body.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant,
                            parse_float=_finite_float)


def loads(raw: bytes) -> Any:
    """Parse a request body; 400 when it is not JSON or holds a value
    that cannot be stored."""
    try:
        # (as json.loads reads bytes: UTF-8, -16 or -32)
        encoding = json.detect_encoding(raw)
        value = _DECODER.decode(raw.decode(encoding, "surrogatepass"))
        # UTF-8 all ASCII, no escape: no string holds a NUL or a surrogate
        # (the decoder refuses a raw control character), and the decoder's
        # hooks refused any non-finite number.
        problem = None if (encoding == "utf-8" and raw.isascii()
                           and b"\\u" not in raw) else value_problem(value)
        if problem:
            raise Unstorable(problem)
    except Unstorable as exc:
        raise bad_request(f"Invalid value in request body: {exc}") from None
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise bad_request(f"Invalid JSON in request body: {exc}") from exc
    return value


def check_url(path: str, params: Iterable[tuple[str, str]]) -> None:
    """400 for a path segment or query parameter that cannot be stored
    or compared (the path is the decoded one, ``%00`` is a NUL)."""
    problem = text_problem(path)
    if problem:
        raise bad_request(f"Invalid value in the URL path: {problem}")
    for name, value in params:
        problem = text_problem(name) or text_problem(value)
        if problem:
            raise bad_request(
                f"Invalid value in query parameter {name[:100]!r}: "
                f"{problem}"
            )
