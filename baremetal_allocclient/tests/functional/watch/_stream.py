"""A test's watcher of ``GET /v1/allocation_changes``: the stream read by
a thread of its own, each JSON line put in a queue (``None`` when the
stream ends), read as a plain HTTP client reads it (``requests``)."""

from __future__ import annotations

import json
import queue
import threading
import time
from typing import Any

import requests

HEADERS = {"X-Baremetal-Alloc-Extensions": "watch",
           "X-OpenStack-Ironic-API-Version": "1.60"}
PATH = "/v1/allocation_changes"


class Stream:
    """One watch connection."""

    def __init__(self, endpoint: str, auth: tuple[str, str] | None = None,
                 **query: Any) -> None:
        self.response = requests.get(
            endpoint + PATH, params=query, headers=HEADERS, auth=auth,
            stream=True, timeout=(5, 60))
        self.status = self.response.status_code
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        if self.status == 200:
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for raw in self.response.iter_lines():
                if raw:
                    self.lines.put(json.loads(raw))
        except (requests.RequestException, OSError, AttributeError,
                ValueError):
            pass  # closed (by the test, or the server went away)
        finally:
            self.lines.put(None)

    def next(self, timeout: float = 10) -> dict[str, Any] | None:
        """The next line (None: the stream ended); raises ``queue.Empty``
        after ``timeout`` seconds."""
        return self.lines.get(timeout=timeout)

    def changes_until(self, done: Any, timeout: float = 20
                      ) -> list[dict[str, Any]]:
        """The changes read until ``done(changes)`` holds."""
        deadline = time.monotonic() + timeout
        found: list[dict[str, Any]] = []
        while not done(found):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"stream: not done, got {found}")
            line = self.next(left)
            if line is None:
                raise AssertionError(f"stream ended, got {found}")
            if line["type"] == "change":
                found.append(line)
        return found

    def close(self) -> None:
        self.response.close()
