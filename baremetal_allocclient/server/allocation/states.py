"""The states of an allocation row."""

from __future__ import annotations

ALLOCATING = "allocating"
ACTIVE = "active"
ERROR = "error"
