"""Which of the reference server's extensions the server offers, from its
``GET /v1`` document (read once per client, see
:meth:`~baremetal_allocclient.v1.protocol.Session.v1_document`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baremetal_allocclient.v1.protocol import Session


def supports_constraints(session: Session) -> bool:
    """Whether the server evaluates constraints itself."""
    from baremetal_allocclient.v1 import selecting

    return selecting.server_evaluates(session)


def supports_groups(session: Session) -> bool:
    """Whether the server reserves a whole group in one transaction."""
    return groups_advertised(session._v1_document())


def supports_queue(session: Session) -> bool:
    """Whether the server keeps allocations waiting in line."""
    from baremetal_allocclient.v1 import queueing

    return queueing.advertised(session._v1_document()) is not None


def groups_advertised(doc: Any) -> bool:
    """Whether a ``GET /v1`` document advertises the groups extension in
    a version this SDK speaks (pure)."""
    from baremetal_allocclient import groups

    if not isinstance(doc, Mapping):
        return False
    found = doc.get("extensions")
    entry = found.get(groups.EXTENSION) if isinstance(found, Mapping) \
        else None
    # Version 1 (older servers) wrote the group into ``extra``, where
    # the SDK still reads it.
    return isinstance(entry, Mapping) and entry.get("version") in (
        1, groups.VERSION)


def spread_advertised(doc: Any) -> bool:
    """Whether a ``GET /v1`` document's groups extension spreads a group
    over failure domains itself (pure)."""
    if not groups_advertised(doc):
        return False
    from baremetal_allocclient import groups

    entry = doc["extensions"][groups.EXTENSION]
    return isinstance(entry.get("spread"), list)
