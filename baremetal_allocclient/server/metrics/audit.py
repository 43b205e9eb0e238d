"""The audit trail: one log line per committed allocation change, on the
``baremetal_allocclient.audit`` logger, with the request's id, user and
project (none for a worker's or a round's change), the allocation, its
owner, its state before and after and its node: enough to answer "who
took node X at 09:14" (the create's line names the request; the line
of the worker that reserved names the node; both name the allocation).

``key=value`` text by default; one JSON object per line with
``serve --audit-json`` (``[DEFAULT] audit_json``).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from baremetal_allocclient.server.domain.recording import REQUEST, Change

LOG = logging.getLogger("baremetal_allocclient.audit")


def record(change: Change) -> dict[str, Any]:
    """The audit record of ``change`` in the current context (pure but
    for the context's request)."""
    request = REQUEST.get()
    entry: dict[str, Any] = {
        "event": "allocation",
        "request_id": request.request_id if request else None,
        "user": request.user if request else None,
        "project": request.project if request else None,
        "actor": change.actor,
        "allocation": change.uuid,
        "owner": change.owner,
        "before": change.before,
        "after": change.after,
        "node": change.node,
    }
    if change.fields:
        entry["fields"] = list(change.fields)
    return entry


def as_text(entry: dict[str, Any]) -> str:
    """``key=value`` pairs, values quoted as JSON strings when needed."""
    return " ".join(f"{key}={_value(value)}" for key, value in entry.items())


def _value(value: Any) -> str:
    if value is None:
        return "-"
    text = ",".join(value) if isinstance(value, list) else str(value)
    if text and all(c.isalnum() or c in "-_.:/," for c in text):
        return text
    return json.dumps(text)


class AuditLog:
    """Writes the audit line of each change (JSON or text)."""

    def __init__(self, as_json: bool = False) -> None:
        self.as_json = as_json

    def write(self, change: Change) -> None:
        if not LOG.isEnabledFor(logging.INFO):
            return
        entry = record(change)
        LOG.info("%s", json.dumps(entry, separators=(",", ":"))
                 if self.as_json else as_text(entry))
