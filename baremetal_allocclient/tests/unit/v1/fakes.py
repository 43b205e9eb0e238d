"""Shared fakes for the SDK unit tests: a clock and Ironic-shaped bodies."""

from __future__ import annotations

import json
from typing import Any

ENDPOINT = "http://ironic.test:6385"
MIN_HEADER = "X-OpenStack-Ironic-API-Minimum-Version"
MAX_HEADER = "X-OpenStack-Ironic-API-Maximum-Version"


class FakeClock:
    """A monotonic clock that only moves when someone sleeps on it."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0, seconds
        self.sleeps.append(seconds)
        self.now += seconds


def version_headers(low: str = "1.1", high: str = "1.73") -> dict[str, str]:
    """The range headers every Ironic /v1 response carries."""
    return {MIN_HEADER: low, MAX_HEADER: high}


def ironic_error(message: str, faultcode: str = "Client") -> dict[str, Any]:
    """Ironic's nested error body: a JSON string inside error_message."""
    return {
        "error_message": json.dumps(
            {"faultcode": faultcode, "faultstring": message,
             "debuginfo": None}
        )
    }


def allocation(uuid: str = "a1", **fields: Any) -> dict[str, Any]:
    """A full allocation body as Ironic 1.60 renders it."""
    body: dict[str, Any] = {
        "uuid": uuid,
        "name": None,
        "state": "allocating",
        "resource_class": "baremetal",
        "traits": [],
        "candidate_nodes": [],
        "node_uuid": None,
        "owner": None,
        "last_error": None,
        "extra": {},
        "created_at": "2024-05-01T10:00:00.123456+00:00",
        "updated_at": None,
        "links": [
            {"href": f"{ENDPOINT}/v1/allocations/{uuid}", "rel": "self"},
            {"href": f"{ENDPOINT}/allocations/{uuid}", "rel": "bookmark"},
        ],
    }
    body.update(fields)
    return body
