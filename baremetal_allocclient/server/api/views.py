"""What rendering shares across resources: timestamps as Ironic writes
them and a resource's links.

Each wing renders its own resources, every field declared once with the
minor version that introduced it (``allocation/views.py``,
``ironic/views.py``).
"""

from __future__ import annotations

import datetime


def timestamp(value: datetime.datetime | None) -> str | None:
    """Stored naive UTC -> ISO 8601 with offset, like Ironic."""
    if value is None:
        return None
    if value.tzinfo is None:  # as stored: the same, without a copy
        return value.isoformat() + "+00:00"
    return value.replace(tzinfo=datetime.timezone.utc).isoformat()


def links(base_url: str, path: str) -> list[dict[str, str]]:
    """The ``self`` and ``bookmark`` links of the resource at ``path``
    (below ``/v1``)."""
    return [
        {"href": f"{base_url}/v1/{path}", "rel": "self"},
        {"href": f"{base_url}/{path}", "rel": "bookmark"},
    ]
