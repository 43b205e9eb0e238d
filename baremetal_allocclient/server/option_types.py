"""Value types of the server's options, shared by the config file, the
environment and the command line (one message per kind of bad value)."""

from __future__ import annotations

import math
from typing import Any

from oslo_config import types

from baremetal_allocclient.server.api import numbers

#: The longest any option's seconds may be: a year and a day (Python's
#: waits, ``timedelta`` and the databases' timestamps take all of it).
MAX_SECONDS = 366 * 24 * 3600.0
#: The largest count of anything (threads, connections, slots).
MAX_COUNT = 1_000_000


class Seconds(types.Float):
    """A finite number of seconds; zero only when ``zero_ok``."""

    def __init__(self, zero_ok: bool = False) -> None:
        super().__init__(type_name="number of seconds")
        self.zero_ok = zero_ok

    def __call__(self, value: Any) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError("must be a number") from None
        if math.isnan(number) or not 0 <= number < math.inf:
            raise ValueError("must be a non-negative number")
        if number == 0 and not self.zero_ok:
            raise ValueError("must be a positive number")
        if number > MAX_SECONDS:
            raise ValueError(f"must be at most {MAX_SECONDS:.0f} seconds "
                             f"(366 days)")
        return number

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Seconds) and other.zero_ok == self.zero_ok

    __hash__ = None  # type: ignore[assignment]


class Count(types.Integer):
    """A whole number, at least ``minimum`` (0 or 1), at most
    ``maximum``."""

    def __init__(self, minimum: int = 1, maximum: int = MAX_COUNT,
                 **integer: Any) -> None:
        super().__init__(**{"type_name": "integer value", **integer})
        self.minimum = minimum
        self.maximum = maximum

    def __call__(self, value: Any) -> int:
        try:
            if isinstance(value, int) and not isinstance(value, bool):
                number = numbers.bounded(value, "value")
            else:
                number = numbers.integer(str(value), "value")
        except numbers.NotANumber:
            raise ValueError("must be an integer") from None
        except numbers.OutOfRange as exc:
            raise ValueError(self._out_of_range(exc.above)) from None
        if number < 0 or number > self.maximum:
            raise ValueError(self._out_of_range(number > 0))
        if number < self.minimum:
            raise ValueError("must be a positive integer")
        return number

    def _out_of_range(self, above: bool) -> str:
        return f"must be at most {self.maximum}" if above else (
            "must not be negative")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Count) and (
            other.minimum, other.maximum) == (self.minimum, self.maximum)

    __hash__ = None  # type: ignore[assignment]


class Port(Count):
    """A TCP port number (0: any free one)."""

    def __init__(self) -> None:
        super().__init__(0, 65535, type_name="port value", min=0,
                         max=65535)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Port)

    __hash__ = None
