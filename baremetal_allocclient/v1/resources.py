"""Typed, immutable views of the API's allocations and nodes.

Each resource is a frozen dataclass whose fields are declared once, with the
wire name, a parser and a human label in the field's metadata.  The same
declaration drives JSON parsing (:meth:`Allocation.from_wire`), the list of
valid ``fields=`` names and the CLI's column table (:func:`columns`).  A
field the server did not return (``fields=`` or an older API version) is
``None``: the SDK never invents values.
"""

from __future__ import annotations

import dataclasses
import datetime
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from baremetal_allocclient import base_errors

Parser = Callable[[Any], Any]


def _parse_str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _parse_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected a boolean, got {type(value).__name__}")
    return value


#: The parsers that return a value of this exact type unchanged: such a
#: value is taken as it is, without calling the parser (most fields of
#: an item of a list are strings).
_UNCHANGED: dict[Parser, type] = {_parse_str: str, _parse_bool: bool}


def _parse_str_tuple(value: Any) -> tuple[str, ...]:
    # A tuple of types: `list | tuple` would build a union at every call.
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"expected a list, got {type(value).__name__}")
    for item in value:
        _parse_str(item)
    return tuple(value)


def _parse_mapping(value: Any) -> Mapping[str, Any]:
    # ``type(...) is dict`` first: what JSON decodes to, and much
    # cheaper than the ``Mapping`` check for every item of a list.
    if type(value) is not dict and not isinstance(value, Mapping):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    # A read-only proxy keeps the frozen dataclass honestly immutable.
    return types.MappingProxyType(dict(value))


def _parse_links(value: Any) -> tuple[Mapping[str, Any], ...]:
    # A tuple of types: `list | tuple` would build a union at every call.
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"expected a list, got {type(value).__name__}")
    return tuple(map(_parse_mapping, value))


def parse_timestamp(value: Any) -> datetime.datetime:
    """Parse an ISO 8601 timestamp; naive values are taken as UTC."""
    if type(value) is str and value.endswith("+00:00"):
        try:  # as Ironic writes them: the common case, first
            return datetime.datetime.fromisoformat(value)
        except ValueError:
            pass
    text = _parse_str(value).strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    stamp = datetime.datetime.fromisoformat(text)
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=datetime.timezone.utc)
    return stamp


def _field(
    label: str,
    parser: Parser,
    *,
    wire: str | None = None,
    hashable: bool = True,
) -> Any:
    """Declare one API field: default ``None``, parser, label, wire name."""
    return dataclasses.field(
        default=None,
        hash=None if hashable else False,
        metadata={"label": label, "parser": parser, "wire": wire},
    )


@dataclasses.dataclass(frozen=True)
class FieldSpec:
    """One row of a resource's field table."""

    name: str
    """Python attribute name."""
    wire: str
    """JSON key in the API."""
    label: str
    """Human column heading, e.g. ``"Resource Class"``."""
    parser: Parser


R = TypeVar("R", bound="_Resource")


class _Resource:
    """Shared parsing for the resource dataclasses (not public)."""

    RESOURCE: ClassVar[str] = "resource"

    @classmethod
    def field_specs(cls) -> tuple[FieldSpec, ...]:
        """Return the field table, in declaration order (built once per
        class: :meth:`from_wire` reads it for every item of a list)."""
        return _field_specs(cls)

    @classmethod
    def _build_field_specs(cls) -> tuple[FieldSpec, ...]:
        specs = []
        for field in dataclasses.fields(cls):  # type: ignore[arg-type]
            meta = field.metadata
            if "parser" not in meta:
                continue
            specs.append(
                FieldSpec(
                    name=field.name,
                    wire=meta["wire"] or field.name,
                    label=meta["label"],
                    parser=meta["parser"],
                )
            )
        return tuple(specs)

    @classmethod
    def wire_names(cls) -> frozenset[str]:
        """Return the names valid in ``fields=``."""
        return frozenset(spec.wire for spec in cls.field_specs())

    @classmethod
    def from_wire(cls: type[R], data: Any) -> R:
        """Build the resource from a decoded JSON object.

        Raises:
            InvalidResponse: ``data`` is not an object or a field has the
                wrong type.
        """
        if type(data) is not dict and not isinstance(data, Mapping):
            raise base_errors.InvalidResponse(
                f"Expected a {cls.RESOURCE} object, got "
                f"{type(data).__name__}"
            )
        # What ``cls(**values)`` makes, without the frozen dataclass's
        # ``__init__`` (an ``object.__setattr__`` per field, a third of
        # the cost of an item of a list): its defaults, then the values.
        values = dict(_defaults(cls))
        for name, wire, parser, plain in _parsers(cls):
            raw = data.get(wire)
            if raw is None:
                continue
            if type(raw) is plain:  # already what the parser returns
                values[name] = raw
                continue
            try:
                values[name] = parser(raw)
            except (TypeError, ValueError) as exc:
                raise base_errors.InvalidResponse(
                    f"Invalid {cls.RESOURCE} field {wire!r} "
                    f"in server response: {exc}"
                ) from exc
        values["raw"] = types.MappingProxyType(dict(data))
        resource = object.__new__(cls)
        resource.__dict__.update(values)
        return resource

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as plain JSON-friendly values, by wire name.

        Timestamps become ISO 8601 strings, tuples lists, mappings dicts.
        """
        return {
            spec.wire: _plain(getattr(self, spec.name))
            for spec in self.field_specs()
        }


#: Each resource class's field table, built on first use.
_FIELD_SPECS: dict[type[_Resource], tuple[FieldSpec, ...]] = {}


def _field_specs(cls: type[_Resource]) -> tuple[FieldSpec, ...]:
    specs = _FIELD_SPECS.get(cls)
    if specs is None:
        specs = _FIELD_SPECS[cls] = cls._build_field_specs()
    return specs


#: Each resource class's field defaults and parsers, built on first use.
_DEFAULTS: dict[type[_Resource], dict[str, Any]] = {}
_PARSERS: dict[type[_Resource],
               tuple[tuple[str, str, Parser, type | None], ...]] = {}


def _defaults(cls: type[_Resource]) -> dict[str, Any]:
    """Every field's default value (all are ``None`` but ``raw``)."""
    defaults = _DEFAULTS.get(cls)
    if defaults is None:
        defaults = _DEFAULTS[cls] = {
            field.name: field.default
            if field.default_factory is dataclasses.MISSING
            else field.default_factory()
            for field in dataclasses.fields(cls)  # type: ignore[arg-type]
        }
    return defaults


def _parsers(cls: type[_Resource]
             ) -> tuple[tuple[str, str, Parser, type | None], ...]:
    """(name, wire name, parser, the type it returns unchanged) of each
    field: the table as :meth:`_Resource.from_wire` reads it for every
    item of a list."""
    parsers = _PARSERS.get(cls)
    if parsers is None:
        parsers = _PARSERS[cls] = tuple(
            (spec.name, spec.wire, spec.parser, _UNCHANGED.get(spec.parser))
            for spec in _field_specs(cls))
    return parsers


def _plain(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    return value


_EMPTY: Mapping[str, Any] = types.MappingProxyType({})

#: Every state an allocation can be in (Ironic's allocation states).
ALLOCATION_STATES: tuple[str, ...] = ("allocating", "active", "error")


@dataclasses.dataclass(frozen=True)
class Allocation(_Resource):
    """A reservation of one node matching a resource class and traits.

    ``state`` is ``allocating`` until the server picks a node, then
    ``active`` (``node_uuid`` set) or ``error`` (``last_error`` says why).
    """

    RESOURCE: ClassVar[str] = "allocation"

    uuid: str | None = _field("UUID", _parse_str)
    name: str | None = _field("Name", _parse_str)
    state: str | None = _field("State", _parse_str)
    resource_class: str | None = _field("Resource Class", _parse_str)
    traits: tuple[str, ...] | None = _field("Traits", _parse_str_tuple)
    candidate_nodes: tuple[str, ...] | None = _field(
        "Candidate Nodes", _parse_str_tuple
    )
    node_uuid: str | None = _field("Node UUID", _parse_str)
    owner: str | None = _field("Owner", _parse_str)
    last_error: str | None = _field("Last Error", _parse_str)
    extra: Mapping[str, Any] | None = _field(
        "Extra", _parse_mapping, hashable=False
    )
    created_at: datetime.datetime | None = _field(  # noqa: RUF009
        "Created At", parse_timestamp
    )
    updated_at: datetime.datetime | None = _field(  # noqa: RUF009
        "Updated At", parse_timestamp
    )
    links: tuple[Mapping[str, Any], ...] | None = _field(
        "Links", _parse_links, hashable=False
    )
    raw: Mapping[str, Any] = dataclasses.field(
        default_factory=lambda: _EMPTY, repr=False, compare=False,
        hash=False,
    )
    """The decoded JSON object exactly as the server sent it."""

    @property
    def marks(self) -> dict[str, Any]:
        """Its group and lease as the SDK records them (keys
        ``baremetal_alloc:group``, ``baremetal_alloc:group_size``,
        ``baremetal_alloc:lease_expires_at``, ``baremetal_alloc:lease``;
        see :mod:`baremetal_allocclient.marks`), wherever the server
        keeps them: the reference server's ``group`` and ``lease``
        fields, else keys of ``extra`` (real Ironic; also what older
        versions wrote).  Read them with :mod:`baremetal_allocclient.
        groups` and :mod:`baremetal_allocclient.leases`."""
        from baremetal_allocclient import marks

        return marks.of(self.raw if self.raw else {"extra": self.extra})

    @property
    def ident(self) -> str:
        """Identifier to address it by (the UUID if known, else the name)."""
        ident = self.uuid or self.name
        if ident is None:
            raise base_errors.InvalidArgument(
                "This allocation has neither uuid nor name (was it read "
                "with fields= excluding both?)"
            )
        return ident


@dataclasses.dataclass(frozen=True)
class Node(_Resource):
    """The read-only part of a node that allocation users need.

    Fields newer than the negotiated API version (``lessee`` needs 1.65,
    ``traits`` 1.37, ``allocation_uuid`` 1.52) are ``None``.
    """

    RESOURCE: ClassVar[str] = "node"

    uuid: str | None = _field("UUID", _parse_str)
    name: str | None = _field("Name", _parse_str)
    provision_state: str | None = _field("Provisioning State", _parse_str)
    target_provision_state: str | None = _field(
        "Target Provision State", _parse_str
    )
    power_state: str | None = _field("Power State", _parse_str)
    target_power_state: str | None = _field("Target Power State", _parse_str)
    maintenance: bool | None = _field("Maintenance", _parse_bool)
    maintenance_reason: str | None = _field("Maintenance Reason", _parse_str)
    resource_class: str | None = _field("Resource Class", _parse_str)
    traits: tuple[str, ...] | None = _field("Traits", _parse_str_tuple)
    owner: str | None = _field("Owner", _parse_str)
    lessee: str | None = _field("Lessee", _parse_str)
    allocation_uuid: str | None = _field("Allocation UUID", _parse_str)
    instance_uuid: str | None = _field("Instance UUID", _parse_str)
    instance_info: Mapping[str, Any] | None = _field(
        "Instance Info", _parse_mapping, hashable=False
    )
    properties: Mapping[str, Any] | None = _field(
        "Properties", _parse_mapping, hashable=False
    )
    driver: str | None = _field("Driver", _parse_str)
    conductor_group: str | None = _field("Conductor Group", _parse_str)
    description: str | None = _field("Description", _parse_str)
    last_error: str | None = _field("Last Error", _parse_str)
    created_at: datetime.datetime | None = _field(  # noqa: RUF009
        "Created At", parse_timestamp
    )
    updated_at: datetime.datetime | None = _field(  # noqa: RUF009
        "Updated At", parse_timestamp
    )
    links: tuple[Mapping[str, Any], ...] | None = _field(
        "Links", _parse_links, hashable=False
    )
    raw: Mapping[str, Any] = dataclasses.field(
        default_factory=lambda: _EMPTY, repr=False, compare=False,
        hash=False,
    )
    """The decoded JSON object exactly as the server sent it."""


def columns(resource: type[_Resource]) -> tuple[tuple[str, str], ...]:
    """Return ``(wire name, label)`` pairs for a resource, for tables."""
    return tuple((spec.wire, spec.label) for spec in resource.field_specs())


def strings(name: str, values: Iterable[str] | None) -> list[str] | None:
    """``values`` as a list of non-empty strings (InvalidArgument else)."""
    if values is None:
        return None
    if isinstance(values, str):
        raise base_errors.InvalidArgument(
            f"{name} must be a list of strings, not one string"
        )
    items = list(values)
    for item in items:
        if not isinstance(item, str) or not item:
            raise base_errors.InvalidArgument(
                f"{name} must contain non-empty strings, got {item!r}"
            )
    return items


def validate_fields(
    resource: type[_Resource], fields: Sequence[str] | None
) -> tuple[str, ...] | None:
    """Check ``fields=`` names against the field table.

    Raises:
        InvalidArgument: naming the unknown fields and the valid ones.
    """
    if fields is None:
        return None
    if isinstance(fields, str):
        fields = [part for part in fields.split(",") if part]
    names = tuple(dict.fromkeys(name.strip() for name in fields))
    if not names:
        raise base_errors.InvalidArgument("fields= must name at least one")
    valid = resource.wire_names()
    unknown = [name for name in names if name not in valid]
    if unknown:
        raise base_errors.InvalidArgument(
            f"Unknown {resource.RESOURCE} field(s): {', '.join(unknown)}; "
            f"valid fields: {', '.join(sorted(valid))}"
        )
    return names
