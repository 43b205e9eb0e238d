"""Rows by UUID, name or id, shared by both wings.

Every function takes the caller's session (its first argument) and
opens no transaction; in a write transaction rows are read locked.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import (
    Select,
    String,
    Text,
    bindparam,
    delete,
    literal_column,
    or_,
    select,
    text,
    update,
)
from sqlalchemy import cast as sql_cast
from sqlalchemy.orm import Session
from sqlalchemy.sql.functions import FunctionElement

from baremetal_allocclient.server.db import node_properties  # noqa: F401
from baremetal_allocclient.server.db.driver_statements import (
    AnyConnection,
    driver_statement,
)
from baremetal_allocclient.server.db.engine import (
    WRITE,
)
from baremetal_allocclient.server.db.models import (
    Allocation,
    Node,
    NodeTrait,
    utcnow,
)
from baremetal_allocclient.server.db.typed import compiles


def rowcount(result: object) -> int:
    """Rows matched by an UPDATE/DELETE (typed access across SA versions)."""
    count = cast(Any, result).rowcount
    return int(count)


def locking(session: Session) -> bool:
    """Whether reads in ``session`` lock rows (a write transaction)."""
    return bool(session.info.get(WRITE))


@functools.cache
def _by_ident(
    model: type[Node] | type[Allocation], by_uuid: bool, lock: bool
) -> Select[Any]:
    column = model.uuid if by_uuid else model.name
    query = select(model).where(column == bindparam("ident"))
    if not lock:
        return query
    # A locked read must see the row as it is now, not as an earlier
    # unlocked read of the same session left it.
    return query.with_for_update().execution_options(populate_existing=True)


def node_by_ident(
    session: Session, ident: str, by_uuid: bool, lock: bool = True
) -> Node | None:
    """A node by UUID (``by_uuid``) or by name, locked in a write.

    Existence checks pass ``lock=False``: on InnoDB, locking a missing
    row takes gap locks that make concurrent inserts deadlock.
    """
    query = _by_ident(Node, by_uuid, lock and locking(session))
    node: Node | None = session.scalars(query, {"ident": ident}).first()
    return node


def allocation_by_ident(
    session: Session, ident: str, by_uuid: bool, lock: bool = True
) -> Allocation | None:
    """An allocation by UUID (``by_uuid``) or by name, locked in a write
    unless ``lock`` is False (existence checks)."""
    query = _by_ident(Allocation, by_uuid, lock and locking(session))
    found: Allocation | None = session.scalars(
        query, {"ident": ident}
    ).first()
    return found


#: The JSON columns an allocation's view shows, with the text shown for
#: JSON ``null`` (:class:`json_or_default`): answers copy them as the
#: text they were stored as (``api.json_text``).
_SHOWN_JSON = {"candidate_nodes": "[]", "extra": "{}", "traits": "[]"}
#: The timestamps it shows: as JSON text (:class:`timestamp_json`).
_SHOWN_TIMES = frozenset({"created_at", "updated_at"})


def stored_json(column: Any, default: str | None = None) -> Any:
    """A JSON column as the text it was stored as, not decoded (the
    ``json`` type keeps its input text on PostgreSQL, MariaDB and
    SQLite; PostgreSQL's driver decodes it unless it is cast); with
    ``default`` (JSON text), that text for JSON ``null`` on PostgreSQL
    and MariaDB (:class:`json_or_default`)."""
    stored: Any = sql_cast(column, Text)
    if default is not None:
        stored = json_or_default(stored, literal_column(f"'{default}'"))
    return stored.label(column.key)


class json_or_default(FunctionElement[str]):
    """``json_or_default(text, default)``: the JSON text, or ``default``
    where it is JSON ``null``, written by PostgreSQL and MariaDB; on
    SQLite the text as it is (``allocation.views`` writes the default:
    SQLite's functions, run in the server's process, cost it more)."""

    type = String()
    inherit_cache = True
    name = "json_or_default"


@compiles(json_or_default)
def _json_as_stored(element: json_or_default, compiler: Any,
                    **kw: Any) -> str:
    stored, _default = element.clauses
    return str(compiler.process(stored, **kw))


@compiles(json_or_default, "postgresql")
@compiles(json_or_default, "mysql")
def _json_or_default(element: json_or_default, compiler: Any,
                     **kw: Any) -> str:
    stored, default = (compiler.process(clause, **kw)
                       for clause in element.clauses)
    return f"COALESCE(NULLIF({stored}, 'null'), {default})"


class timestamp_json(FunctionElement[str]):
    """A naive UTC timestamp column as the JSON text of Ironic's ISO 8601
    with offset (``"2026-11-26T01:02:03.000004+00:00"``, no fraction
    when it is zero, as ``datetime.isoformat`` writes it; ``null`` for
    NULL), written by PostgreSQL (``to_char``) and MariaDB
    (``DATE_FORMAT``); on SQLite the text it stores, ``YYYY-MM-DD
    HH:MM:SS.ffffff`` (NULL for NULL), which ``allocation.views`` writes
    as that JSON text: SQLite's string functions, run in the server's
    process, cost it more than Python's slicing.  Neither the driver nor
    SQLAlchemy then parses a ``datetime`` that an answer only writes out
    again."""

    type = String()
    inherit_cache = True
    name = "timestamp_json"


@compiles(timestamp_json)
def _timestamp_as_stored(element: timestamp_json, compiler: Any,
                         **kw: Any) -> str:
    return str(compiler.process(*element.clauses, **kw))


@compiles(timestamp_json, "postgresql")
def _timestamp_to_char(element: timestamp_json, compiler: Any,
                       **kw: Any) -> str:
    column = compiler.process(*element.clauses, **kw)
    return (f"COALESCE('\"' || REPLACE(to_char({column}, "
            f"'YYYY-MM-DD\"T\"HH24:MI:SS.US'), '.000000', '') "
            f"|| '+00:00\"', 'null')")


@compiles(timestamp_json, "mysql")
def _timestamp_date_format(element: timestamp_json, compiler: Any,
                           **kw: Any) -> str:
    column = compiler.process(*element.clauses, **kw)
    # text() doubles the percent signs where the driver's paramstyle
    # needs it (pymysql's "format"); CONCAT, as || is OR there.
    template = compiler.process(text("'%Y-%m-%dT%H:%i:%s.%f'"), **kw)
    return (f"COALESCE(CONCAT('\"', REPLACE(DATE_FORMAT({column}, "
            f"{template}), '.000000', ''), '+00:00\"'), 'null')")


def shown_timestamp(column: Any) -> Any:
    """A timestamp column as :class:`timestamp_json` (labelled as the
    column), for the views of reads."""
    return timestamp_json(column).label(column.key)


def _as_shown(column: Any) -> Any:
    """An allocation's column as a view reads it: the JSON ones it shows
    as stored text, its timestamps as text the database writes, the
    others as they are."""
    if column.key in _SHOWN_JSON:
        return stored_json(column, _SHOWN_JSON[column.key])
    if column.key in _SHOWN_TIMES:
        return shown_timestamp(column)
    return column


@functools.cache
def _allocation_with_node_uuid(by_uuid: bool) -> Select[Any]:
    column = Allocation.uuid if by_uuid else Allocation.name
    return (
        select(*map(_as_shown, Allocation.__table__.columns),
               Node.uuid.label("node_uuid"))
        .outerjoin(Node, Node.id == Allocation.node_id)
        .where(column == bindparam("ident"))
    )


def allocation_for_reading(
    conn: AnyConnection, ident: str, by_uuid: bool
) -> Any:
    """An allocation's row by UUID or name, with its node's UUID (the
    ``node_uuid`` column), in one query; None when there is none.

    For answering reads: a named tuple of the driver's values
    (:class:`~baremetal_allocclient.server.db.driver_statements.
    DriverStatement`),
    not an ORM object nor a SQLAlchemy ``Row``, because building those
    costs more CPU than the query itself and GET is what polling clients
    repeat.
    """
    return driver_statement(_allocation_with_node_uuid(by_uuid),
                            conn.dialect).first(conn, {"ident": ident})


def allocation_from_row(row: Any) -> Allocation:
    """An ORM allocation (not tracked by any session) built from a row
    of :func:`allocation_for_reading`, without the JSON columns its view
    shows (they are text there) and with its timestamps as ``datetime``
    (the row has them as :class:`timestamp_json` selects them)."""
    values = row._asdict()
    for name in ("node_uuid", *_SHOWN_JSON):
        values.pop(name, None)
    for name in _SHOWN_TIMES:
        values[name] = _datetime(values[name])
    return Allocation(**values)


def _datetime(shown: str | None) -> datetime.datetime | None:
    """A timestamp as :class:`timestamp_json` selects it, as a naive UTC
    ``datetime``."""
    if shown is None or shown == "null":
        return None
    moment = datetime.datetime.fromisoformat(shown.strip('"'))
    return moment.replace(tzinfo=None)


#: What an allocation's view shows, in the order of the columns of
#: :func:`allocation_rows` (rendering reads its rows by position).
ALLOCATION_VIEW_COLUMNS = (
    "uuid", "created_at", "updated_at", "candidate_nodes", "extra",
    "traits", "last_error", "funnel_error", "name", "owner",
    "resource_class", "state",
)
_SHOWN = tuple(_as_shown(getattr(Allocation, name))
               for name in ALLOCATION_VIEW_COLUMNS)
#: Where a row of :func:`allocation_rows` has the allocation's UUID.
ALLOCATION_UUID = ALLOCATION_VIEW_COLUMNS.index("uuid")


#: The columns of the extensions' fields (``allocation.marks``), after
#: ``node_uuid`` in a row of ``allocation_rows(marks=True)``.
MARK_COLUMNS = ("group_name", "group_size", "lease_expires_at",
                "lease_duration")


def _mark_column(name: str) -> Any:
    """A column of :data:`MARK_COLUMNS` as a row reads it: the lease's
    end as text (``YYYY-MM-DD HH:MM:SS[.ffffff]``, what
    ``datetime.fromisoformat`` reads), so no row of a list is converted
    in Python (SQLite's ``DateTime`` would be, every row)."""
    column = getattr(Allocation, name)
    if name == "lease_expires_at":
        return sql_cast(column, Text).label(name)
    return column


def allocation_rows(marks: bool = False) -> Select[Any]:
    """Every allocation's row with the columns its view shows (in the
    order of :data:`ALLOCATION_VIEW_COLUMNS`) and its node's UUID
    (``node_uuid``), for the caller to filter, order and page; with
    ``marks``, then the :data:`MARK_COLUMNS` (for a request that opted
    into the groups or leases extension)."""
    extra = [_mark_column(name) for name in MARK_COLUMNS] if marks else []
    return select(*_SHOWN, Node.uuid.label("node_uuid"), *extra).outerjoin(
        Node, Node.id == Allocation.node_id
    )


def allocation_by_id(
    session: Session, allocation_id: int
) -> Allocation | None:
    """An allocation by database id, locked in a write."""
    return session.get(
        Allocation, allocation_id, with_for_update=locking(session),
        populate_existing=True,
    )


_NODE_UUID = select(Node.uuid).where(Node.id == bindparam("node_id"))


def node_uuid(session: Session, node_id: int) -> str | None:
    """The UUID of the node with this database id."""
    return session.connection().scalar(_NODE_UUID, {"node_id": node_id})


#: The nodes a request's ``candidate_nodes`` name, by UUID or by name:
#: only what resolving them needs, in one statement however many there
#: are (one ORM read each cost 0.2 ms of a create per candidate).
_NODES_NAMED = select(Node.uuid, Node.name, Node.owner, Node.lessee).where(
    or_(Node.uuid.in_(bindparam("uuids", expanding=True)),
        Node.name.in_(bindparam("names", expanding=True))))


def nodes_named(session: Session, uuids: Sequence[str],
                names: Sequence[str]) -> Sequence[Any]:
    """UUID, name, owner and lessee of the nodes with these UUIDs or
    names (text compares exactly on every database:
    ``db/collation.py``)."""
    return session.connection().execute(
        _NODES_NAMED, {"uuids": list(uuids), "names": list(names)}).all()


def instance_in_use(session: Session, instance_uuid: str) -> bool:
    """Whether a node has this ``instance_uuid``."""
    return session.scalar(select(Node.id).where(
        Node.instance_uuid == instance_uuid)) is not None


def node_traits(session: Session, node_id: int) -> set[str]:
    """The traits of one node."""
    return set(session.scalars(
        select(NodeTrait.trait).where(NodeTrait.node_id == node_id)))


def traits_of(
    session: Session, node_ids: Sequence[int]
) -> dict[int, list[str]]:
    """Sorted traits for each of the given nodes (one query)."""
    result: dict[int, list[str]] = {nid: [] for nid in node_ids}
    if not node_ids:
        return result
    rows = session.execute(
        select(NodeTrait.node_id, NodeTrait.trait)
        .where(NodeTrait.node_id.in_(node_ids))
        .order_by(NodeTrait.trait)
    )
    for node_id, trait in rows:
        result[node_id].append(trait)
    return result


def node_uuids(session: Session, node_ids: Sequence[int]) -> dict[int, str]:
    """Map node ids to UUIDs (one query)."""
    if not node_ids:
        return {}
    rows = session.execute(
        select(Node.id, Node.uuid).where(Node.id.in_(node_ids))
    )
    return {int(nid): str(uuid) for nid, uuid in rows}


def replace_traits(
    session: Session, node_id: int, traits: Sequence[str]
) -> None:
    """Set a node's traits to exactly ``traits``."""
    session.execute(delete(NodeTrait).where(NodeTrait.node_id == node_id))
    for trait in sorted(set(traits)):
        session.add(NodeTrait(node_id=node_id, trait=trait))


def touch_node(session: Session, node_id: int) -> None:
    """Bump updated_at after a change that did not go through the ORM."""
    session.execute(
        update(Node).where(Node.id == node_id).values(updated_at=utcnow())
    )
