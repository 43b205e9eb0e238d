"""One page of a list: how many, sorted by what, which way (a value the
handlers parse and the services' queries apply)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Page:
    """Sorting and paging of one list request."""

    limit: int
    sort_key: str
    sort_dir: str
