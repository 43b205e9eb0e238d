"""Documents assembled from JSON text are what ``json.dumps`` writes."""

from __future__ import annotations

import datetime
import importlib
import inspect
import json
import operator
import types
from collections.abc import Iterator
from typing import Any
from unittest import mock

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import String, bindparam, create_engine, select
from sqlalchemy.dialects import sqlite

from baremetal_allocclient.server.allocation import views
from baremetal_allocclient.server.api import json_text
from baremetal_allocclient.server.db import lookups

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=20,
)
#: ``json_text.string`` as the server has it (CPython's C function) and
#: as it is without that (``json.dumps``).
_STRING_FUNCTIONS = (json_text.string, json.dumps)


def _each_string_function() -> Iterator[None]:
    """Each of :data:`_STRING_FUNCTIONS` as ``json_text.string`` in turn."""
    for function in _STRING_FUNCTIONS:
        with mock.patch.object(json_text, "string", function):
            yield


_OBJECTS = st.dictionaries(st.text(max_size=4), _JSON, min_size=1,
                           max_size=4)


class JsonTextTests(testtools.TestCase):

    @settings(max_examples=200, derandomize=True, deadline=None)
    @given(_OBJECTS, st.text(max_size=4), _JSON)
    def test_assembled_as_json_dumps_writes(
            self, obj: dict[str, Any], key: str, value: Any) -> None:
        for _ in _each_string_function():
            pieces = [(k, json.dumps(v)) for k, v in obj.items()]
            self.assertEqual(json.dumps(obj), json_text.members(pieces))
            self.assertEqual(json.dumps(list(obj.values())),
                             json_text.array(text for _, text in pieces))
            others = [piece for piece in pieces if piece[0] != key]
            for count in (0, 1, len(pieces)):  # an array in the same join
                expected = {key: list(obj.values())[:count],
                            **{k: v for k, v in obj.items() if k != key}}
                self.assertEqual(json.dumps(expected), json_text.members([
                    (key, json_text.Items(text for _, text in pieces[:count])),
                    *others]))
            added = (json.dumps({**obj, key: value}) if key not in obj
                     else json.dumps(obj)[:-1] + ", "
                     + json.dumps(key) + ": " + json.dumps(value) + "}")
            self.assertEqual(added, json_text.with_member(
                json_text.members(pieces), key, json.dumps(value)))

    def test_stored_columns(self) -> None:
        self.assertEqual('{"a": 1}', json_text.stored('{"a": 1}', "{}"))
        self.assertEqual('{"a": 1}', json_text.stored({"a": 1}, "{}"))
        for empty in (None, "null", {}, []):
            self.assertEqual("[]", json_text.stored(empty, "[]"))


def _orm_like(**values: Any) -> Any:
    base: dict[str, Any] = {
        "uuid": "8b3a1c9e-54a4-4d56-9d8f-3f0f1d6c2a10", "name": None,
        "created_at": datetime.datetime(2026, 11, 26, 1, 2, 3),
        "updated_at": None, "candidate_nodes": [], "extra": {},
        "last_error": None, "funnel_error": None, "owner": None,
        "resource_class": "rc", "state": "allocating", "traits": [],
    }
    base.update(values)
    return types.SimpleNamespace(**base)


_SQLITE_TIME = sqlite.DATETIME().bind_processor(sqlite.dialect())
_SQLITE = create_engine("sqlite://")
_SHOWN_TIME = select(lookups.timestamp_json(bindparam("at", type_=String)))
_SHOWN_JSON = {default: select(lookups.stored_json(
    bindparam("at", type_=String), default)) for default in ("[]", "{}")}


def _selected(query: Any, stored: str | None) -> str | None:
    """What ``query`` selects of a value stored on SQLite as ``stored``
    (the expression a read selects, run by SQLite)."""
    with _SQLITE.connect() as conn:
        selected: str | None = conn.execute(
            query, {"at": stored}).scalar_one()
        return selected


def _as_stored(allocation: Any) -> Any:
    """The same allocation as a row of ``lookups.allocation_rows`` has
    it on SQLite: what a read selects of its JSON columns stored as
    text, and of its timestamps (naive UTC, as the server writes them)
    stored as SQLite stores them (SQLAlchemy's own format).  PostgreSQL
    and MariaDB select other text: ``test_answers_as_stored``."""
    def stored_time(value: datetime.datetime | None) -> str:
        return _selected(_SHOWN_TIME, None if value is None else _SQLITE_TIME(
            value.replace(tzinfo=None)))
    return types.SimpleNamespace(**{
        **vars(allocation),
        **{k: _selected(_SHOWN_JSON[default], json.dumps(getattr(
            allocation, k))) for k, default in (
                ("candidate_nodes", "[]"), ("extra", "{}"), ("traits", "[]"))},
        **{k: stored_time(getattr(allocation, k))
           for k in ("created_at", "updated_at")}})


def _expected(allocation: Any, node_uuid: str | None, base: str,
              funnel: bool) -> dict[str, Any]:
    """The view as a dict, field by field, in Ironic's order."""
    def when(value: datetime.datetime | None) -> str | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return value.isoformat()
    return {
        "uuid": allocation.uuid, "created_at": when(allocation.created_at),
        "updated_at": when(allocation.updated_at),
        "candidate_nodes": allocation.candidate_nodes or [],
        "extra": allocation.extra or {},
        "last_error": (allocation.funnel_error or allocation.last_error)
        if funnel else allocation.last_error,
        "name": allocation.name, "owner": allocation.owner,
        "resource_class": allocation.resource_class,
        "state": allocation.state, "traits": allocation.traits or [],
        "links": [
            {"href": f"{base}/v1/allocations/{allocation.uuid}",
             "rel": "self"},
            {"href": f"{base}/allocations/{allocation.uuid}",
             "rel": "bookmark"}],
        "node_uuid": node_uuid,
    }


class AllocationRendererTests(testtools.TestCase):

    @settings(max_examples=100, derandomize=True, deadline=None)
    @given(extra=_OBJECTS, name=st.none() | st.text(max_size=5),
           last_error=st.none() | st.text(max_size=8),
           funnel_error=st.none() | st.text(max_size=8),
           funnel=st.booleans(),
           created=st.datetimes() | st.datetimes().map(
               lambda moment: moment.replace(microsecond=0)),
           updated=st.none() | st.datetimes(
               timezones=st.none() | st.just(datetime.timezone.utc)),
           node_uuid=st.none() | st.uuids().map(str))
    def test_json_dumps_of_the_view(self, extra: dict[str, Any],
                                    name: str | None,
                                    last_error: str | None,
                                    funnel_error: str | None, funnel: bool,
                                    created: datetime.datetime,
                                    updated: datetime.datetime | None,
                                    node_uuid: str | None) -> None:
        for _ in _each_string_function():
            allocation = _orm_like(
                extra=extra, name=name, last_error=last_error,
                funnel_error=funnel_error, created_at=created,
                updated_at=updated,
                traits=["CUSTOM_B", "CUSTOM_A"], candidate_nodes=["n\u00e9"])
            base = 'http://h\u00e9"st:1'
            render = views.AllocationRenderer(base, 100, funnel=funnel)
            expected = json.dumps(
                _expected(allocation, node_uuid, base, funnel))
            self.assertEqual(expected, render(allocation, node_uuid))
            self.assertEqual(expected,
                             render(_as_stored(allocation), node_uuid))
            row = (*(getattr(_as_stored(allocation), name)
                     for name in lookups.ALLOCATION_VIEW_COLUMNS), node_uuid)
            self.assertEqual(expected, render.row(row))

    @settings(max_examples=300, derandomize=True, deadline=None)
    @given(fields=st.none() | st.lists(st.sampled_from(views._FIELDS)),
           minor=st.sampled_from([59, 60, 100]), funnel=st.booleans(),
           created=st.datetimes() | st.datetimes().map(
               lambda moment: moment.replace(microsecond=0)),
           updated=st.none() | st.datetimes() | st.datetimes().map(
               lambda moment: moment.replace(microsecond=0)),
           funnel_error=st.none() | st.text(max_size=4),
           texts=st.lists(st.none() | st.text(max_size=4), min_size=4,
                          max_size=4),
           node_uuid=st.none() | st.uuids().map(str))
    def test_a_row_is_written_as_its_allocation_is(
            self, fields: list[str] | None, minor: int, funnel: bool,
            created: datetime.datetime, updated: datetime.datetime | None,
            funnel_error: str | None,
            texts: list[str | None], node_uuid: str | None) -> None:
        # A list's rows (a timestamp with no fraction or none at all, a
        # funnel or not, a JSON column stored as null), in every
        # selection of fields at the versions with and without owner.
        for _ in _each_string_function():
            last_error, name, owner, resource_class = texts
            for stored_null in (None, "candidate_nodes", "extra", "traits"):
                self._check_row(fields, minor, funnel, stored_null, node_uuid,
                                created_at=created, updated_at=updated,
                                last_error=last_error, name=name, owner=owner,
                                resource_class=resource_class,
                                funnel_error=funnel_error)

    def _check_row(self, fields: list[str] | None, minor: int,
                   funnel: bool, stored_null: str | None,
                   node_uuid: str | None, **values: Any) -> None:
        allocation = _orm_like(
            uuid="8b3a1c9e-%s-4d56", candidate_nodes=["n\u00e9"],
            extra={"%(a)s": "\"%"}, traits=["CUSTOM_A"], state="active",
            **values)
        if stored_null is not None:  # stored as JSON null
            setattr(allocation, stored_null, None)
        stored = _as_stored(allocation)
        base = 'http://h\u00e9"%s:1'
        render = views.AllocationRenderer(base, minor, fields, funnel)
        view = _expected(allocation, node_uuid, base, funnel)
        expected = json.dumps({
            key: value for key, value in view.items()
            if (fields is None or key in fields or key == "links")
            and (key != "owner" or minor >= 60)})
        row = (*(getattr(stored, name)
                 for name in lookups.ALLOCATION_VIEW_COLUMNS), node_uuid)
        self.assertEqual(expected, render.row(row))
        self.assertEqual(expected, render(stored, node_uuid))

    def test_timestamps_as_sqlite_stores_them(self) -> None:
        # SQLAlchemy's text, with a fraction of zero, and SQLite's own
        # CURRENT_TIMESTAMP (no fraction): each is written as the time
        # it says, as datetime.isoformat writes it.
        render = views.AllocationRenderer("http://h", 100)
        for stored, shown in (
                ("2026-11-26 01:02:03.000004",
                 "2026-11-26T01:02:03.000004+00:00"),
                ("2026-11-26 01:02:03.000000", "2026-11-26T01:02:03+00:00"),
                ("2026-11-26 01:02:03", "2026-11-26T01:02:03+00:00")):
            row = _as_stored(_orm_like())
            row.created_at = row.updated_at = _selected(_SHOWN_TIME, stored)
            for view in (render(row, None), render.row(
                    (*(getattr(row, name)
                       for name in lookups.ALLOCATION_VIEW_COLUMNS), None))):
                self.assertEqual((shown, shown), operator.itemgetter(
                    "created_at", "updated_at")(json.loads(view)))

    def test_rows_are_read_in_the_order_they_are_selected(self) -> None:
        self.assertEqual(
            [*lookups.ALLOCATION_VIEW_COLUMNS, "node_uuid"],
            [c.name for c in lookups.allocation_rows().selected_columns])
        self.assertEqual(
            [*lookups.ALLOCATION_VIEW_COLUMNS, "node_uuid"],
            list(inspect.signature(views._arguments).parameters)[1:])

    def test_fields_and_versions(self) -> None:
        allocation = _orm_like(owner="p")
        view = json.loads(views.AllocationRenderer(
            "http://h", 100, ["extra", "uuid"])(allocation, None))
        self.assertEqual(["uuid", "extra", "links"], list(view))
        old = json.loads(views.AllocationRenderer("http://h", 59)(
            allocation, None))
        self.assertNotIn("owner", old)
        self.assertEqual("p", json.loads(views.AllocationRenderer(
            "http://h", 60)(allocation, None))["owner"])
        self.assertEqual(["links"], list(json.loads(views.AllocationRenderer(
            "http://h", 100, ["links"])(allocation, None))))

    def test_values_are_not_templates(self) -> None:
        # The fields go into a "%" template: a value's own "%s" and
        # "%(name)s" must come out as they are.
        allocation = _orm_like(name="a%sb", extra={"%(uuid)s": "%d%%"},
                               last_error="100%")
        for fields in (None, ["name", "extra", "last_error"]):
            view = json.loads(views.AllocationRenderer(
                "http://h%s", 100, fields)(_as_stored(allocation), None))
            self.assertEqual(("a%sb", {"%(uuid)s": "%d%%"}, "100%"),
                             (view["name"], view["extra"],
                              view["last_error"]))
            self.assertTrue(view["links"][0]["href"].startswith(
                "http://h%s/v1/"))



class PrivateStringFunctionTests(testtools.TestCase):
    """``json.encoder.encode_basestring_ascii``: undocumented, used by
    ``json_text.string``; ``json.dumps`` where it is missing."""

    @settings(max_examples=300, derandomize=True)
    @given(st.text())
    def test_encode_basestring_ascii_writes_json_dumps_text(
            self, text: str) -> None:
        self.assertIs(json.encoder.encode_basestring_ascii, json_text.string,
                      "json.encoder.encode_basestring_ascii is missing")
        self.assertEqual(json.dumps(text), json_text.string(text))

    def test_without_it_json_dumps(self) -> None:
        self.addCleanup(importlib.reload, json_text)
        with mock.patch.object(json.encoder, "encode_basestring_ascii",
                               None):
            importlib.reload(json_text)
        self.assertIs(json.dumps, json_text.string)
        self.assertEqual('"n\\u00e9\\"s"', json_text.string('n\u00e9"s'))
