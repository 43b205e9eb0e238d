"""Input every database stores exactly as sent, checked before any SQL.

PostgreSQL refuses NUL characters in text and ``NaN``/``Infinity`` in
JSON; MariaDB's JSON columns refuse non-finite numbers too; no driver can
encode a lone surrogate as UTF-8; SQLite stores all of them and answers
them back.  So the same request would be a 201 on one database and a
database error on another.  Instead these values are refused with a 400
wherever a client can put them: the path, query parameters, and every
string, key and number of a JSON body (``1e400`` included, which
Python's ``json`` reads as infinity).  Integers are held to the 64-bit
range of :mod:`.numbers` as the body is parsed, before ``int()`` reads
their digits; a refusal names where the value stood (``/extra/size``).

Pure functions; the application calls :func:`check_url` before routing,
:func:`loads` parses every request body, and ``enroll`` checks each
inventory entry with :func:`value_problem`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from baremetal_allocclient.server.api import numbers
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
        raise Unstorable(f"{numbers.quoted(literal)} is out of range, "
                         f"numbers must be finite")
    return number


def _pointer(path: tuple[str | int, ...]) -> str:
    """A JSON Pointer (RFC 6901) to where a value stood: ``/extra/a~1b``."""
    return "".join("/" + str(step).replace("~", "~0").replace("/", "~1")
                   for step in path) or "/"


def _number_problem(item: int | float) -> str | None:
    if isinstance(item, float):
        if math.isfinite(item):
            return None
        return f"{item} is not allowed, numbers must be finite"
    if isinstance(item, bool) or numbers.INT_MIN <= item <= numbers.INT_MAX:
        return None
    return (f"{numbers.quoted(str(item))} is out of range, integers must "
            f"be between {numbers.INT_MIN} and {numbers.INT_MAX}")


def value_problem(value: Any) -> str | None:
    """Why a parsed document (JSON or YAML) cannot be stored, naming
    where (a JSON Pointer): a string or key with a NUL or a lone
    surrogate, a non-finite number, an integer outside the 64-bit range,
    or a value the body's parser refused (:class:`_Refused`); None when
    it can (pure, iterative: no recursion limit)."""
    pending: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while pending:
        path, item = pending.pop()
        problem = None
        if isinstance(item, _Refused):
            problem = item.reason
        elif isinstance(item, str):
            problem = text_problem(item)
        elif isinstance(item, int | float):
            problem = _number_problem(item)
        elif isinstance(item, dict):
            for key, inner in reversed(item.items()):
                pending.append(((*path, key), inner))
                pending.append((path, key))  # the key itself
        elif isinstance(item, list):
            pending.extend(((*path, index), inner) for index, inner
                           in reversed(list(enumerate(item))))
        if problem:
            return f"{_pointer(path)}: {problem}"
    return None


class _Refused(str):
    """A number the body's parser refused, kept in place so
    :func:`value_problem` can say where it stood."""

    reason: str


def _refused_integer(literal: str) -> int | str:
    try:
        return numbers.json_integer(literal)
    except numbers.NumberError as exc:
        refused = _Refused(literal)
        refused.reason = exc.reason
        return refused


def _refused_constant(name: str) -> str:
    refused = _Refused(name)
    refused.reason = f"{name} is not allowed, numbers must be finite"
    return refused


def _refused_float(literal: str) -> float | str:
    number = float(literal)
    if math.isfinite(number):
        return number
    refused = _Refused(literal)
    refused.reason = (f"{numbers.quoted(literal)} is out of range, numbers "
                      f"must be finite")
    return refused


#: ``json.loads`` with these hooks would build a decoder for each body.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant,
                            parse_float=_finite_float,
                            parse_int=numbers.json_integer)
#: The same, keeping refused numbers in place to say where they stood
#: (used only for a body the first one refused).
_LOCATING_DECODER = json.JSONDecoder(parse_constant=_refused_constant,
                                     parse_float=_refused_float,
                                     parse_int=_refused_integer)


def document(text: str, ascii_plain: bool = False) -> Any:
    """Parse a JSON document from a client.

    Raises:
        Unstorable: a value no database stores, or a number out of range
            (the message says where it stood).
        ValueError: not JSON.

    ``ascii_plain``: the text is known to be ASCII without a ``\\u``
    escape, so no string can hold a NUL or a surrogate (the decoder
    refuses a raw control character) and the walk is skipped; the
    decoder's hooks refuse every non-finite or out-of-range number.
    """
    try:
        value = _DECODER.decode(text)
    except (numbers.NumberError, Unstorable):
        value = _LOCATING_DECODER.decode(text)
        raise Unstorable(value_problem(value)
                         or "a number is out of range") from None
    problem = None if ascii_plain else value_problem(value)
    if problem:
        raise Unstorable(problem)
    return value


def loads(raw: bytes) -> Any:
    """Parse a request body; 400 when it is not JSON or holds a value
    that cannot be stored (naming where)."""
    try:
        # (as json.loads reads bytes: UTF-8, -16 or -32)
        encoding = json.detect_encoding(raw)
        text = raw.decode(encoding, "surrogatepass")
        return document(text, ascii_plain=encoding == "utf-8"
                        and raw.isascii() and b"\\u" not in raw)
    except Unstorable as exc:
        raise bad_request(f"Invalid value in request body: {exc}") from None
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise bad_request(f"Invalid JSON in request body: {exc}") from exc


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
