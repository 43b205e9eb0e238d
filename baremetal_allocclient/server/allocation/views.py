"""JSON representation of allocations for a given version.

Each field is declared once with the minor version that introduced it;
the same table drives rendering and ``fields=`` validation.
"""

from __future__ import annotations

import datetime
import functools
import operator
from collections.abc import Sequence
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
    whose JSON columns are the text they were stored as and whose
    timestamps are what ``lookups.timestamp_json`` selects (JSON text, or
    on SQLite the text it stores)."""

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
    """A timestamp as the JSON text of Ironic's ISO 8601 with offset.  A
    row's is that text already on PostgreSQL and MariaDB, and on SQLite
    the text it stores, ``YYYY-MM-DD HH:MM:SS.ffffff``, or None
    (``lookups.timestamp_json``); an ORM object's is a ``datetime``,
    naive UTC."""
    if isinstance(value, str):
        if value[0] == '"' or value == "null":
            return value
        if value[20:] != "000000":  # a fraction (or none): sliced as is
            return f'"{value[:10]}T{value[11:]}+00:00"'
        value = datetime.datetime.fromisoformat(value)
    if type(value) is datetime.datetime and value.tzinfo is None:
        return f'"{value.isoformat()}+00:00"'
    text = timestamp(value)
    return "null" if text is None else f'"{text}"'


class AllocationRenderer:
    """Renders allocations as Ironic does at ``minor``, each straight to
    JSON text (``json.dumps`` of the view, byte for byte): the JSON
    columns and the timestamps are copied as the database wrote them,
    not decoded and encoded again.

    ``fields`` limits the fields (``links`` always stays); with
    ``funnel`` (the request opted into the constraints extension)
    ``last_error`` carries the selection funnel when one was recorded.
    Everything but the allocation is decided once, for rendering many:
    the shown fields become one ``%`` template (:func:`_template`).  A
    list's rows showing every field (no ``fields=``, a version with
    ``owner``: what clients ask for) are written by one f-string in
    :meth:`row` instead, a third cheaper per row than the template's
    ``%``; the tests hold both to ``json.dumps`` of the view.
    """

    def __init__(self, base_url: str, minor: int,
                 fields: Sequence[str] | None = None,
                 funnel: bool = False) -> None:
        names = allocation_fields(minor)
        if fields is not None:
            names = [n for n in names if n in fields or n == "links"]
        self._hrefs = (json_text.string(f"{base_url}/v1/allocations/")[:-1],
                       json_text.string(f"{base_url}/allocations/")[:-1])
        self._template = _template(names, self._hrefs)
        self._every_field = names == list(_FIELDS)
        self._funnel = funnel

    def __call__(self, allocation: AllocationRecord,
                 node_uuid: str | None) -> str:
        """An allocation (ORM object or row), read by attribute."""
        values: Any = (*_VIEW_VALUES(allocation), node_uuid)
        return self._template % _arguments(self._funnel, *values)

    def row(self, row: Sequence[Any]) -> str:
        """A row of ``lookups.allocation_rows``, read by position: what
        :func:`_arguments` does, inline (a list renders a thousand).

        On PostgreSQL and MariaDB every value is JSON text but the
        strings it quotes.  SQLite's rows have the text SQLite stores
        (``lookups.timestamp_json``, ``lookups.json_or_default``): a
        usual one (timestamps with a fraction other than zero, no JSON
        ``null``) has its timestamps sliced here, any other goes
        through :func:`_arguments`."""
        (uuid, created, updated, candidates, extra, traits, last_error,
         funnel_error, name, owner, resource_class, state, node_uuid) = row
        if created[0] != '"':  # as SQLite stores them
            try:
                usual = (created[20:] != "000000" != updated[20:]
                         and candidates != "null" and extra != "null"
                         and traits != "null")
            except TypeError:  # updated_at is NULL
                usual = False
            if not usual:
                return self._template % _arguments(self._funnel, *row)
            created = f'"{created[:10]}T{created[11:]}+00:00"'
            updated = f'"{updated[:10]}T{updated[11:]}+00:00"'
        if funnel_error and self._funnel:
            last_error = funnel_error
        string = json_text.string
        quoted_uuid = string(uuid)
        if self._every_field:
            href, bookmark = self._hrefs
            bare = quoted_uuid[1:]
            rc = "null" if resource_class is None else string(resource_class)
            # Two f-strings: CPython builds one of more than 30 pieces
            # as a list for str.join (measured a sixth slower a row).
            head = (
                f'{{"uuid": {quoted_uuid}, "created_at": {created}, '
                f'"updated_at": {updated}, "candidate_nodes": {candidates}, '
                f'"extra": {extra}, "last_error": '
                f'{"null" if last_error is None else string(last_error)}, ')
            return head + (
                f'"name": {"null" if name is None else string(name)}, '
                f'"owner": {"null" if owner is None else string(owner)}, '
                f'"resource_class": {rc}, "state": {string(state)}, '
                f'"traits": {traits}, '
                f'"links": [{{"href": {href}{bare}, "rel": "self"}}, '
                f'{{"href": {bookmark}{bare}, "rel": "bookmark"}}], '
                '"node_uuid": '
                f'{"null" if node_uuid is None else string(node_uuid)}}}')
        return self._template % (
            quoted_uuid, created, updated, candidates, extra,
            "null" if last_error is None else string(last_error),
            "null" if name is None else string(name),
            "null" if owner is None else string(owner),
            "null" if resource_class is None else string(resource_class),
            string(state), traits, quoted_uuid[1:], quoted_uuid[1:],
            "null" if node_uuid is None else string(node_uuid))


#: An allocation's values in the order of ``lookups.ALLOCATION_VIEW_COLUMNS``.
_VIEW_VALUES = operator.attrgetter(*lookups.ALLOCATION_VIEW_COLUMNS)
#: Every field a view can show, in Ironic's order: the order of the
#: arguments :func:`_arguments` returns.
_FIELDS = (
    "uuid", "created_at", "updated_at", "candidate_nodes", "extra",
    "last_error", "name", "owner", "resource_class", "state", "traits",
    "links", "node_uuid",
)
#: How :func:`_template` writes the value of a field that is not one
#: ``%s`` of a JSON text: the links, from the quoted UUID without its
#: first quote (twice).
_PIECES = {
    "links": '[{{"href": {0}%s, "rel": "self"}}, '
             '{{"href": {1}%s, "rel": "bookmark"}}]',
}


def _template(shown: Sequence[str], hrefs: tuple[str, str]) -> str:
    """The ``%`` template of a view showing the fields ``shown``, with
    links starting ``hrefs`` (JSON text, open): every field of
    :data:`_FIELDS` takes its arguments in that order, and a field not
    shown takes them too and writes nothing (``%.0s``)."""
    escaped = tuple(href.replace("%", "%%") for href in hrefs)
    pieces: list[str] = []
    separator = ""
    for name in _FIELDS:
        value = _PIECES.get(name, "%s").format(*escaped)
        if name in shown:
            pieces.append(f'{separator}"{name}": {value}')
            separator = ", "
        else:
            pieces.append("%.0s" * value.count("%s"))
    return "{" + "".join(pieces) + "}"


def _arguments(
    funnel: bool,
    uuid: str, created_at: datetime.datetime | str,
    updated_at: datetime.datetime | str | None,
    candidate_nodes: str | list[str] | None,
    extra: str | dict[str, Any] | None,
    traits: str | list[str] | None, last_error: str | None,
    funnel_error: str | None, name: str | None, owner: str | None,
    resource_class: str | None, state: str, node_uuid: str | None,
) -> tuple[str, ...]:
    """The arguments of :func:`_template` for a renderer's ``funnel``,
    from an allocation's values in the order of
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
        quoted_uuid[1:],
        quoted_uuid[1:],
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
