"""Where the SDK sends an allocation's group and lease.

The SDK records them as keys of the request's ``extra`` (strings under
the one prefix ``baremetal_alloc:``, :mod:`baremetal_allocclient.marks`)
and reads them from :attr:`Allocation.marks`.  On the wire:

* reads (show, list) opt into the ``groups`` and ``leases`` extensions
  (a header real Ironic ignores), so the reference server adds the
  ``group`` and ``lease`` fields, and ``extra`` stays the user's;
* a create or a renewal that records a mark asks ``GET /v1`` (read once
  per client) whether the server keeps them in fields (``leases``
  version 2 or later, the reference server): if so they travel as the
  ``group`` and ``lease`` fields and never touch ``extra``; otherwise
  (real Ironic) as keys of ``extra``, every value a string.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from baremetal_allocclient import extension_names, leases, marks

if TYPE_CHECKING:
    from baremetal_allocclient.v1.protocol import Session

#: What every read of allocations opts into.
READ_EXTENSIONS = (extension_names.GROUPS, extension_names.LEASES)
#: The header value of a plain read.
READ_HEADER = {extension_names.EXTENSION_HEADER: ", ".join(READ_EXTENSIONS)}
#: The first version of the leases extension with the ``lease`` field.
FIELDS_VERSION = 2


def fields_advertised(doc: Any) -> bool:
    """Whether a ``GET /v1`` document says the server keeps groups and
    leases in fields of their own (pure)."""
    found = doc.get("extensions") if isinstance(doc, Mapping) else None
    entry = found.get(leases.EXTENSION) if isinstance(found, Mapping) \
        else None
    if not isinstance(entry, Mapping):
        return False
    version = entry.get("version")
    return isinstance(version, int) and version >= FIELDS_VERSION and (
        entry.get("field") == leases.FIELD)


def has_fields(session: Session) -> bool:
    """Whether the server keeps groups and leases in fields."""
    return fields_advertised(session._v1_document())


def outgoing(session: Session, body: dict[str, Any]) -> list[str]:
    """Move the marks of a create's ``body`` out of ``extra`` into the
    ``group`` and ``lease`` fields when the server has them (in place);
    the extensions the body then needs."""
    extra, found = marks.split(body.get("extra"))
    if not found or not has_fields(session):
        return []
    if extra:
        body["extra"] = extra
    else:
        body.pop("extra", None)
    fields = marks.to_fields(found)
    body.update(fields)
    named = ((extension_names.GROUPS, extension_names.GROUP_FIELD),
             (extension_names.LEASES, leases.FIELD))
    return [name for name, field in named if field in fields]


def lease_patch(session: Session, set_extra: Mapping[str, Any] | None,
                unset_extra: list[str]
                ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """For a ``PATCH`` that sets (or unsets) a lease: the ``set_extra``
    left and the operations on the ``lease`` field, when the server has
    it; ``set_extra`` unchanged and no operation otherwise."""
    extra, found = marks.split(set_extra)
    lease = marks.to_fields(found).get(leases.FIELD)
    removed = leases.EXPIRES_KEY in unset_extra
    if (lease is None and not removed) or not has_fields(session):
        return (dict(set_extra) if set_extra is not None else None), []
    if lease is None:
        unset_extra[:] = [k for k in unset_extra if k not in marks.KEYS]
        return extra, [{"op": "remove", "path": "/" + leases.FIELD}]
    return extra, [{"op": "add", "path": "/" + leases.FIELD,
                    "value": lease}]
