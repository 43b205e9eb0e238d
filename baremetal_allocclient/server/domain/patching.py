"""JSON Patch (RFC 6902) on a resource's fields, refused as Ironic does."""

from __future__ import annotations

from typing import Any

import jsonpatch

from baremetal_allocclient.server.domain.errors import Invalid


def apply(document: dict[str, Any], patch: list[dict[str, Any]]) -> Any:
    """``document`` after ``patch`` (a new object; ``document`` is left
    as it was); a patch that does not apply is :class:`Invalid`
    (``Invalid patch: ...``).  The result need not be an object: the
    caller checks it."""
    try:
        return jsonpatch.apply_patch(document, patch)
    except (jsonpatch.JsonPatchException,
            jsonpatch.JsonPointerException) as exc:
        raise Invalid(f"Invalid patch: {exc}") from None
