"""Numbers from clients and operators, bounded where they are parsed.

Python reads whole numbers of any size, so a number is only as safe as
the first thing done with it: ``float()`` of an integer over 308 digits
raises ``OverflowError``, ``int()`` of text over 4,300 digits raises
``ValueError`` (CPython's limit on the conversion), a ``timedelta`` or
``threading.Event.wait`` of a large one ``OverflowError``.  Each of those
turned a request into a 500, or a stored allocation into one no worker
would ever see.

So every number a client can send (the API version header, ``Prefer:
wait``, ``limit``, every integer in a JSON body or a query's JSON
document) and every number of the server's options is read here, once,
into a range every later step can take:

* integers: a signed 64-bit value (what PostgreSQL's and MariaDB's
  ``BIGINT``, Go's ``int64`` and Java's ``long`` hold); the text is
  measured before ``int()`` reads it, so no length costs more than a
  glance;
* non-integers: finite IEEE doubles (``storable`` refuses ``1e400``).

Pure, standard library only.  :class:`OutOfRange` and
:class:`NotANumber` are ``ValueError`` and their message names the field.
"""

from __future__ import annotations

INT_MIN = -(2**63)
INT_MAX = 2**63 - 1
#: Digits of the longest integer in range (``9223372036854775807``).
_MAX_DIGITS = len(str(INT_MAX))
#: How much of a refused value a message quotes.
_QUOTED = 24


class NumberError(ValueError):
    """A number the server does not take; ``str()`` names the field."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class NotANumber(NumberError):
    """Not a whole number written in decimal digits."""


class OutOfRange(NumberError):
    """A whole number outside the field's range (``above``: too large)."""

    def __init__(self, field: str, reason: str, above: bool) -> None:
        super().__init__(field, reason)
        self.above = above


def quoted(text: str) -> str:
    """``text`` as a message may quote it: long ones cut, their length
    said (a 10,000-digit number is not echoed back)."""
    if len(text) <= _QUOTED:
        return text
    return f"{text[:_QUOTED // 2]}...({len(text)} characters)"


def _range_text(minimum: int, maximum: int) -> str:
    return f"must be between {minimum} and {maximum}"


def integer(text: str, field: str, *, minimum: int = INT_MIN,
            maximum: int = INT_MAX) -> int:
    """A whole number written as ASCII decimal digits with an optional
    sign (surrounding blanks allowed), within ``minimum`` .. ``maximum``
    (at most the 64-bit range).

    Raises:
        NotANumber: anything else (``"1.5"``, ``"1e3"``, ``"٣"``, ``""``).
        OutOfRange: a whole number outside the range, however long.
    """
    stripped = text.strip()
    sign = stripped[:1] if stripped[:1] in ("+", "-") else ""
    digits = stripped[len(sign):]
    if not (digits.isascii() and digits.isdigit()):
        raise NotANumber(field, f"{quoted(text)!r} is not a whole number")
    significant = digits.lstrip("0")
    if len(significant) > _MAX_DIGITS:  # measured, not read
        raise OutOfRange(field, f"{quoted(stripped)} is out of range, "
                         f"{_range_text(minimum, maximum)}",
                         above=sign != "-")
    return bounded(int(sign + (significant or "0")), field,
                   minimum=minimum, maximum=maximum)


def bounded(value: int, field: str, *, minimum: int = INT_MIN,
            maximum: int = INT_MAX) -> int:
    """``value`` when it is within the range; :class:`OutOfRange`."""
    if minimum <= value <= maximum:
        return value
    raise OutOfRange(field, f"{quoted(str(value))} is out of range, "
                     f"{_range_text(minimum, maximum)}",
                     above=value > maximum)


def json_integer(literal: str) -> int:
    """An integer literal of a JSON document (``json``'s ``parse_int``
    hook): in the 64-bit range, else :class:`OutOfRange` (the field is
    named by whoever knows where the literal stood)."""
    return integer(literal, "number")
