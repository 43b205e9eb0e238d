"""Value types of the server's options, shared by the config file, the
environment and the command line (one message per kind of bad value)."""

from __future__ import annotations

import math
from typing import Any

from oslo_config import types


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
        return number

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Seconds) and other.zero_ok == self.zero_ok

    __hash__ = None  # type: ignore[assignment]


class Count(types.Integer):
    """A whole number, at least ``minimum`` (0 or 1)."""

    def __init__(self, minimum: int = 1) -> None:
        super().__init__(type_name="integer value")
        self.minimum = minimum

    def __call__(self, value: Any) -> int:
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise ValueError("must be an integer") from None
        if number < 0:
            raise ValueError("must not be negative")
        if number < self.minimum:
            raise ValueError("must be a positive integer")
        return number

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Count) and other.minimum == self.minimum

    __hash__ = None  # type: ignore[assignment]
