"""JSON documents assembled from pieces that are already JSON text.

A list of 1,000 allocations is mostly the JSON its rows were stored as:
decoding that text and encoding it again is most of what answering it
would cost.  These helpers put such pieces together with the separators
``json.dumps`` uses (``", "`` and ``": "``, ASCII only), so a document
assembled here is byte for byte what ``json.dumps`` writes for the same
value (tested against it in ``unit/server/api/test_json_text.py``).

:func:`string` is ``json.encoder.encode_basestring_ascii``, the C
function ``json.dumps`` runs for a string: documented nowhere, but in
every CPython 3 (``test_json_text`` names it, and fails by that name if
it goes or writes another text).  Where it is missing, :func:`string` is
``json.dumps``, the same text for 0.2 us more a string (about 12% of a
list of 1,000's CPU: ``doc/source/internals/benchmarks.rst``, "Private
internals").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, cast

#: ``json.dumps`` of a string: the C function it runs for one, or
#: ``json.dumps`` itself where there is none (see above).
string: Callable[[str], str] = cast(
    Callable[[str], str],
    getattr(json.encoder, "encode_basestring_ascii", None) or json.dumps)


def value(obj: Any) -> str:
    """Any JSON value, as ``json.dumps`` writes it."""
    return json.dumps(obj)


def stored(text: str | Any | None, default: str) -> str:
    """A JSON column's value as JSON text: the text it was stored as
    (selected without decoding, see ``db.lookups.stored_json``), or the
    decoded value of an ORM object encoded again; ``default`` for SQL
    NULL and JSON ``null``."""
    if text is None or text == "null":
        return default
    if isinstance(text, str):
        return text
    return json.dumps(text) if text else default


class Items(list[str]):
    """The items of an array, each JSON text, not yet joined: as a value
    of :func:`members`, the array is written in the object's one join."""


def members(pairs: Iterable[tuple[str, str | Items]]) -> str:
    """An object from (key, JSON text of the value) pairs, every piece
    copied once, in one join: a value that is :class:`Items` too (a
    list's array is most of its answer)."""
    parts = ["{"]
    for key, value in pairs:
        parts += (string(key), ": ")
        if isinstance(value, Items):
            parts += _array_parts(value)
        else:
            parts.append(value)
        parts.append(", ")
    if len(parts) > 1:
        parts.pop()  # the last separator
    parts.append("}")
    return "".join(parts)


def _array_parts(items: list[str]) -> list[str]:
    """``[``, the items with ``, `` between them, ``]``."""
    if not items:
        return ["[]"]
    parts = [", "] * (2 * len(items) + 1)
    parts[0], parts[-1] = "[", "]"
    parts[1::2] = items
    return parts


def array(items: Iterable[str]) -> str:
    """An array of items that are JSON text."""
    return "[" + ", ".join(items) + "]"


def with_member(obj: str, key: str, text: str) -> str:
    """The object ``obj`` (JSON text with at least one member) with one
    more member at its end."""
    return f"{obj[:-1]}, {string(key)}: {text}}}"
