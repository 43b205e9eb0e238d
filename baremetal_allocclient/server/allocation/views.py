"""JSON representation of allocations for a given version.

Each field is declared once with the minor version that introduced it;
the same table drives rendering and ``fields=`` validation.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from baremetal_allocclient.server.api import json_text, versions
from baremetal_allocclient.server.api.errors import bad_request
from baremetal_allocclient.server.api.views import timestamp
from baremetal_allocclient.server.db import lookups

ALLOCATION_SORT_KEYS = (
    "id", "uuid", "name", "created_at", "updated_at", "state",
    "resource_class", "owner",
)



def allocation_fields(minor: int) -> list[str]:
    """Allocation fields that exist at this version."""
    names = [
        "uuid", "created_at", "updated_at", "candidate_nodes", "extra",
        "last_error", "name", "owner", "resource_class", "state", "traits",
        "links", "node_uuid",
    ]
    if minor < versions.ALLOCATION_OWNER:
        names.remove("owner")
    return names


def check_allocation_fields(
    fields: Sequence[str] | None, minor: int
) -> None:
    """``fields=`` on allocations: unknown fields are a 400 (Ironic's
    wording, which lists the fields of this version)."""
    if fields is None:
        return
    known = [
        "candidate_nodes", "created_at", "extra", "last_error", "links",
        "name", "node_uuid", "resource_class", "state", "traits",
        "updated_at", "uuid",
    ]
    if minor >= versions.ALLOCATION_OWNER:
        known.append("owner")
    for field in fields:
        if field not in known:
            raise bad_request(
                f"Schema error: '{field}' is not one of {known!r}"
            )


class AllocationRecord(Protocol):
    """What rendering reads of an allocation: an ORM ``Allocation``, or a
    row of :func:`~baremetal_allocclient.server.db.lookups.allocation_rows`
    whose JSON columns are the text they were stored as."""

    @property
    def uuid(self) -> str: ...
    @property
    def created_at(self) -> datetime.datetime: ...
    @property
    def updated_at(self) -> datetime.datetime | None: ...
    @property
    def candidate_nodes(self) -> str | list[str] | None: ...
    @property
    def extra(self) -> str | dict[str, Any] | None: ...
    @property
    def last_error(self) -> str | None: ...
    @property
    def funnel_error(self) -> str | None: ...
    @property
    def name(self) -> str | None: ...
    @property
    def owner(self) -> str | None: ...
    @property
    def resource_class(self) -> str | None: ...
    @property
    def state(self) -> str: ...
    @property
    def traits(self) -> str | list[str] | None: ...


def _time(value: datetime.datetime | str | None) -> str:
    """A stored timestamp (naive UTC: a ``datetime``, or the text
    ``YYYY-MM-DD HH:MM:SS.ffffff`` the database writes for
    ``lookups.timestamp_text``) as the JSON text of Ironic's ISO 8601
    with offset."""
    if isinstance(value, str):
        if len(value) == 26 and value[20:] != "000000":  # sliced as is
            return f'"{value[:10]}T{value[11:]}+00:00"'
        value = datetime.datetime.fromisoformat(value)
    if type(value) is datetime.datetime and value.tzinfo is None:
        return f'"{value.isoformat()}+00:00"'
    text = timestamp(value)
    return "null" if text is None else f'"{text}"'


class AllocationRenderer:
    """Renders allocations as Ironic does at ``minor``, each straight to
    JSON text (``json.dumps`` of the view, byte for byte): the JSON
    columns are copied as stored, not decoded and encoded again.

    ``fields`` limits the fields (``links`` always stays); with
    ``funnel`` (the request opted into the constraints extension)
    ``last_error`` carries the selection funnel when one was recorded.
    Everything but the allocation is decided once, for rendering many:
    the shown fields become one ``%`` template over the texts
    :func:`_field_texts` returns (and which of them it shows), and
    another over a usual row's values as they are (:meth:`row`).
    """

    def __init__(self, base_url: str, minor: int,
                 fields: Sequence[str] | None = None,
                 funnel: bool = False) -> None:
        names = allocation_fields(minor)
        if fields is not None:
            names = [n for n in names if n in fields or n == "links"]
        self._template = "{" + ", ".join(
            f'"{name}": %s' for name in names) + "}"
        shown = tuple(_FIELDS.index(name) for name in names)
        self._shown: Callable[[tuple[str, ...]], tuple[str, ...]] | None = (
            None if shown == tuple(range(len(_FIELDS)))
            else lambda texts: tuple(texts[i] for i in shown))
        self._hrefs = (
            json_text.string(f"{base_url}/v1/allocations/")[:-1],
            json_text.string(f"{base_url}/allocations/")[:-1])
        self._funnel = funnel
        self._usual = _usual_template(names, self._hrefs)

    def __call__(self, allocation: AllocationRecord,
                 node_uuid: str | None) -> str:
        """An allocation (ORM object or row), read by attribute."""
        return self._written((*(getattr(allocation, name)
                                for name in lookups.ALLOCATION_VIEW_COLUMNS),
                              node_uuid))

    def row(self, row: Sequence[Any]) -> str:
        """A row of ``lookups.allocation_rows``, read by position (the
        fast way: a list renders a thousand).

        A usual row, as every database writes one (both timestamps
        stored with their microseconds, other than zero; its JSON
        columns, always text here, other than ``null``; no funnel
        recorded), is written by one ``%`` of :func:`_usual_template`
        over the values as they are; any other as :meth:`__call__`
        writes it.  Both write the same text (``test_json_text``)."""
        (uuid, created, updated, candidates, extra, traits, last_error,
         funnel_error, name, owner, resource_class, state, node_uuid) = row
        try:
            usual = (len(created) == 26 == len(updated)
                     and created[20:] != "000000" != updated[20:]
                     and candidates != "null" and extra != "null"
                     and traits != "null" and funnel_error is None)
        except TypeError:  # a timestamp not text, or NULL
            usual = False
        if usual:
            string = json_text.string
            quoted_uuid = string(uuid)
            return self._usual % (
                quoted_uuid, created[:10], created[11:], updated[:10],
                updated[11:], candidates, extra,
                "null" if last_error is None else string(last_error),
                "null" if name is None else string(name),
                "null" if owner is None else string(owner),
                "null" if resource_class is None else string(resource_class),
                string(state), traits, quoted_uuid[1:], quoted_uuid[1:],
                "null" if node_uuid is None else string(node_uuid))
        return self._written(row)

    def _written(self, row: Sequence[Any]) -> str:
        """Any allocation's values, in the order of ``row``."""
        texts = _field_texts(self._funnel, self._hrefs, *row)
        return self._template % (
            texts if self._shown is None else self._shown(texts))


#: Every field a view can show, in Ironic's order: the order of the
#: texts :func:`_field_texts` returns.
_FIELDS = (
    "uuid", "created_at", "updated_at", "candidate_nodes", "extra",
    "last_error", "name", "owner", "resource_class", "state", "traits",
    "links", "node_uuid",
)


#: How :func:`_usual_template` writes the fields that are not one
#: ``%s`` of a JSON text: a timestamp from the date and the time of its
#: stored text, the links from the quoted UUID without its first quote.
_USUAL_PIECES = {
    "created_at": '"%sT%s+00:00"',
    "updated_at": '"%sT%s+00:00"',
    "links": '[{{"href": {0}%s, "rel": "self"}}, '
             '{{"href": {1}%s, "rel": "bookmark"}}]',
}


def _usual_template(shown: Sequence[str], hrefs: tuple[str, str]) -> str:
    """The ``%`` template of :meth:`AllocationRenderer.row`'s usual rows:
    every field of :data:`_FIELDS` takes its arguments in that order; a
    field not ``shown`` takes them too, and writes nothing (``%.0s``)."""
    escaped = tuple(href.replace("%", "%%") for href in hrefs)
    pieces: list[str] = []
    separator = ""
    for name in _FIELDS:
        value = _USUAL_PIECES.get(name, "%s").format(*escaped)
        if name in shown:
            pieces.append(f'{separator}"{name}": {value}')
            separator = ", "
        else:
            pieces.append("%.0s" * value.count("%s"))
    return "{" + "".join(pieces) + "}"


def _field_texts(
    funnel: bool, hrefs: tuple[str, str],
    uuid: str, created_at: datetime.datetime | str,
    updated_at: datetime.datetime | str | None,
    candidate_nodes: str | list[str] | None,
    extra: str | dict[str, Any] | None,
    traits: str | list[str] | None, last_error: str | None,
    funnel_error: str | None, name: str | None, owner: str | None,
    resource_class: str | None, state: str, node_uuid: str | None,
) -> tuple[str, ...]:
    """The JSON text of every field in :data:`_FIELDS`, in that order,
    for a renderer's ``funnel`` and links (``hrefs``), from an
    allocation's values in the order of
    ``lookups.ALLOCATION_VIEW_COLUMNS`` and its node's UUID."""
    string = json_text.string
    stored = json_text.stored
    quoted_uuid = string(uuid)
    if funnel and funnel_error:
        last_error = funnel_error
    return (
        quoted_uuid,
        _time(created_at),
        _time(updated_at),
        stored(candidate_nodes, "[]"),
        stored(extra, "{}"),
        "null" if last_error is None else string(last_error),
        "null" if name is None else string(name),
        "null" if owner is None else string(owner),
        "null" if resource_class is None else string(resource_class),
        string(state),
        stored(traits, "[]"),
        f'[{{"href": {hrefs[0]}{quoted_uuid[1:]}, "rel": "self"}}, '
        f'{{"href": {hrefs[1]}{quoted_uuid[1:]}, "rel": "bookmark"}}]',
        "null" if node_uuid is None else string(node_uuid),
    )


def allocation_view(
    allocation: AllocationRecord,
    node_uuid: str | None,
    base_url: str,
    minor: int,
    fields: Sequence[str] | None = None,
    funnel: bool = False,
) -> str:
    """One allocation as :class:`AllocationRenderer` renders it."""
    return renderer(base_url, minor, fields, funnel)(allocation, node_uuid)


def renderer(base_url: str, minor: int, fields: Sequence[str] | None = None,
             funnel: bool = False) -> AllocationRenderer:
    """The :class:`AllocationRenderer` of these arguments, made once
    (every poll at one version asks for the same one)."""
    return _renderer(base_url, minor,
                     None if fields is None else tuple(fields), funnel)


@functools.lru_cache(maxsize=256)
def _renderer(base_url: str, minor: int, fields: tuple[str, ...] | None,
              funnel: bool) -> AllocationRenderer:
    return AllocationRenderer(base_url, minor, fields, funnel)
