"""Typed SQLAlchemy models: the single source of the database schema.

Alembic migrations under ``migrations/versions`` create exactly this schema;
a unit test compares both so they cannot drift apart.  Every text column
compares exactly on every database (``collation.py``).
"""

from __future__ import annotations

import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Double,
    ForeignKey,
    Index,
    Integer,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from baremetal_allocclient.server.db.collation import ExactString, ExactText
from baremetal_allocclient.server.db.typed import mysql_datetime


def utcnow() -> datetime.datetime:
    """Naive UTC now: every timestamp column stores naive UTC."""
    now = datetime.datetime.now(datetime.timezone.utc)
    # (what replace(tzinfo=None) gives, in a third of its time)
    return datetime.datetime.combine(now.date(), now.time())


class Base(DeclarativeBase):
    """Declarative base holding the metadata alembic compares against."""


class Node(Base):
    """A bare metal node (fake-hardware only)."""

    __tablename__ = "nodes"
    __table_args__ = (
        # The allocation candidate query filters on these columns and
        # reads a window of them in id order (a range of this index).
        Index(
            "nodes_selection_idx",
            "resource_class",
            "provision_state",
            "maintenance",
            "id",
        ),
        Index("nodes_owner_idx", "owner"),
        Index("nodes_lessee_idx", "lessee"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(ExactString(36), unique=True)
    name: Mapped[str | None] = mapped_column(ExactString(255), unique=True)
    driver: Mapped[str] = mapped_column(ExactString(255))
    resource_class: Mapped[str | None] = mapped_column(ExactString(80))
    provision_state: Mapped[str] = mapped_column(ExactString(15))
    target_provision_state: Mapped[str | None] = mapped_column(ExactString(15))
    provision_updated_at: Mapped[datetime.datetime | None] = mapped_column(
        DateTime
    )
    power_state: Mapped[str | None] = mapped_column(ExactString(15))
    target_power_state: Mapped[str | None] = mapped_column(ExactString(15))
    maintenance: Mapped[bool] = mapped_column(Boolean, default=False)
    maintenance_reason: Mapped[str | None] = mapped_column(ExactText())
    fault: Mapped[str | None] = mapped_column(ExactString(255))
    last_error: Mapped[str | None] = mapped_column(ExactText())
    owner: Mapped[str | None] = mapped_column(ExactString(255))
    lessee: Mapped[str | None] = mapped_column(ExactString(255))
    description: Mapped[str | None] = mapped_column(ExactText())
    instance_uuid: Mapped[str | None] = mapped_column(
        ExactString(36), unique=True)
    allocation_id: Mapped[int | None] = mapped_column(Integer, unique=True)
    instance_info: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    properties: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    extra: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    driver_info: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    driver_internal_info: Mapped[dict[str, Any]] = mapped_column(
        JSON, default=dict
    )
    network_data: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    automated_clean: Mapped[bool | None] = mapped_column(Boolean)
    protected: Mapped[bool] = mapped_column(Boolean, default=False)
    protected_reason: Mapped[str | None] = mapped_column(ExactText())
    retired: Mapped[bool] = mapped_column(Boolean, default=False)
    retired_reason: Mapped[str | None] = mapped_column(ExactText())
    conductor_group: Mapped[str] = mapped_column(ExactString(255), default="")
    #: Ironic's API 1.82 field; set here through the enroll inventory or
    #: the constraints extension (see doc/source/howto/choosing-nodes.rst).
    shard: Mapped[str | None] = mapped_column(ExactString(255))
    #: The UUID of the node's chassis (API 1.0; ``chassis``); no foreign
    #: key: the services lock the chassis row instead (0015_chassis).
    chassis_uuid: Mapped[str | None] = mapped_column(ExactString(36),
                                                     index=True)
    #: API 1.83: the UUID of this node's parent; a child node is never
    #: allocated and not listed unless asked for.
    parent_node: Mapped[str | None] = mapped_column(ExactString(36))
    #: API 1.95: the node must never be powered off.
    disable_power_off: Mapped[bool] = mapped_column(Boolean, default=False)
    #: API 1.104: the name of the instance deployed on the node.
    instance_name: Mapped[str | None] = mapped_column(ExactString(255))
    #: Set on create (any version); fake-hardware changes none of the three
    #: afterwards (Ironic's node_schema(); see api/nodes.py).
    console_enabled: Mapped[bool] = mapped_column(Boolean, default=False)
    #: API 1.75: any string Ironic's schema takes, or NULL (unknown).
    boot_mode: Mapped[str | None] = mapped_column(ExactString(255))
    #: API 1.75: NULL is unknown.
    secure_boot: Mapped[bool | None] = mapped_column(Boolean)
    #: The ``*_interface`` fields; NULL is the default implementation
    #: (server/logic/interfaces.py).
    bios_interface: Mapped[str | None] = mapped_column(ExactString(255))
    boot_interface: Mapped[str | None] = mapped_column(ExactString(255))
    console_interface: Mapped[str | None] = mapped_column(ExactString(255))
    deploy_interface: Mapped[str | None] = mapped_column(ExactString(255))
    firmware_interface: Mapped[str | None] = mapped_column(ExactString(255))
    inspect_interface: Mapped[str | None] = mapped_column(ExactString(255))
    management_interface: Mapped[str | None] = mapped_column(ExactString(255))
    network_interface: Mapped[str | None] = mapped_column(ExactString(255))
    power_interface: Mapped[str | None] = mapped_column(ExactString(255))
    raid_interface: Mapped[str | None] = mapped_column(ExactString(255))
    rescue_interface: Mapped[str | None] = mapped_column(ExactString(255))
    storage_interface: Mapped[str | None] = mapped_column(ExactString(255))
    vendor_interface: Mapped[str | None] = mapped_column(ExactString(255))
    inspection_started_at: Mapped[datetime.datetime | None] = (
        mapped_column(DateTime))
    inspection_finished_at: Mapped[datetime.datetime | None] = (
        mapped_column(DateTime))
    created_at: Mapped[datetime.datetime] = mapped_column(
        DateTime, default=utcnow
    )
    updated_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class Chassis(Base):
    """A chassis (Ironic's API 1.0): a description and ``extra``, and
    the nodes that name it in ``chassis_uuid``."""

    __tablename__ = "chassis"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(ExactString(36), unique=True)
    description: Mapped[str | None] = mapped_column(ExactString(255))
    extra: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime.datetime] = mapped_column(
        DateTime, default=utcnow
    )
    updated_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class NodeTrait(Base):
    """One trait of one node; a table so selection can filter in SQL."""

    __tablename__ = "node_traits"
    __table_args__ = (Index("node_traits_trait_idx", "trait"),)

    node_id: Mapped[int] = mapped_column(
        Integer, ForeignKey("nodes.id", ondelete="CASCADE"), primary_key=True
    )
    trait: Mapped[str] = mapped_column(ExactString(255), primary_key=True)


class NodeProperty(Base):
    """One top-level key of a node's ``properties``, normalized for
    constraints: its text (``constraints.as_text``) and, when it is a
    number, its numeric value (``constraints.as_number``).  Kept in step
    with ``Node.properties`` by ``db/node_properties.py``."""

    __tablename__ = "node_properties"

    node_id: Mapped[int] = mapped_column(
        Integer, ForeignKey("nodes.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(ExactString(255), primary_key=True)
    text: Mapped[str | None] = mapped_column(ExactText())
    number: Mapped[float | None] = mapped_column(Double)


class Allocation(Base):
    """An allocation request and, once active, its reserved node."""

    __tablename__ = "allocations"
    __table_args__ = (
        Index("allocations_state_affinity_idx", "state", "conductor_affinity"),
        Index("allocations_resource_class_idx", "resource_class"),
        Index("allocations_owner_idx", "owner"),
        # Who waits in line in a resource class (the queue extension).
        Index("allocations_queue_idx", "state", "resource_class",
              "queue_deadline"),
        # Whose lease has ended (serve --expire-leases).
        Index("allocations_lease_idx", "lease_expires_at"),
        # An id is never handed out twice, even after a delete: workers
        # and take-over identify allocations by id (and UUID).
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(ExactString(36), unique=True)
    name: Mapped[str | None] = mapped_column(ExactString(255), unique=True)
    node_id: Mapped[int | None] = mapped_column(
        Integer, ForeignKey("nodes.id", ondelete="SET NULL"), index=True
    )
    state: Mapped[str] = mapped_column(ExactString(15))
    #: Why it failed, in Ironic's words (what every client reads) ...
    last_error: Mapped[str | None] = mapped_column(ExactText())
    #: ... and the same with the selection funnel, read instead by
    #: clients that opted into the constraints extension.
    funnel_error: Mapped[str | None] = mapped_column(ExactText())
    resource_class: Mapped[str | None] = mapped_column(ExactString(80))
    traits: Mapped[list[str]] = mapped_column(JSON, default=list)
    candidate_nodes: Mapped[list[str]] = mapped_column(JSON, default=list)
    extra: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    owner: Mapped[str | None] = mapped_column(ExactString(255))
    #: The constraints extension's document (``constraints.to_wire``).
    constraints: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    conductor_affinity: Mapped[str | None] = mapped_column(ExactString(255))
    #: Set when the allocation waits in line for capacity (the queue
    #: extension): it stays ``allocating`` until then, at most.
    queue_deadline: Mapped[datetime.datetime | None] = mapped_column(
        DateTime
    )
    #: The group it belongs to and the group's size (the groups
    #: extension; shown only to requests that opt in, never in ``extra``).
    group_name: Mapped[str | None] = mapped_column(ExactString(255))
    group_size: Mapped[int | None] = mapped_column(Integer)
    #: When its lease ends (naive UTC) and the duration last asked for
    #: (``leases.format_duration`` text; the leases extension, shown only
    #: to requests that opt in, never in ``extra``).
    lease_expires_at: Mapped[datetime.datetime | None] = mapped_column(
        DateTime
    )
    lease_duration: Mapped[str | None] = mapped_column(ExactString(64))
    created_at: Mapped[datetime.datetime] = mapped_column(
        DateTime, default=utcnow
    )
    updated_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


#: Heartbeats need sub-second precision; MySQL/MariaDB DATETIME has
#: whole seconds unless asked for more.  Both dialect names are needed:
#: ``mariadb+pymysql://`` URLs get the dialect named "mariadb".
PreciseDateTime = DateTime().with_variant(
    mysql_datetime(6), "mysql", "mariadb"
)


class Conductor(Base):
    """One ``serve`` process, known by its name (``--conductor-name``).

    ``heartbeat_at`` is written with the *database's* clock, so hosts
    with skewed clocks still agree on who is dead.  ``online`` is cleared
    by a graceful stop, which makes the conductor dead at once.
    """

    __tablename__ = "conductors"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    hostname: Mapped[str] = mapped_column(ExactString(255), unique=True)
    online: Mapped[bool] = mapped_column(Boolean, default=True)
    heartbeat_at: Mapped[datetime.datetime] = mapped_column(PreciseDateTime)
    created_at: Mapped[datetime.datetime] = mapped_column(
        DateTime, default=utcnow
    )
    updated_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class Port(Base):
    """A network port (NIC) of a node, known by its MAC address."""

    __tablename__ = "ports"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(ExactString(36), unique=True)
    #: Lower case, colon-separated (normalised before it is stored).
    address: Mapped[str] = mapped_column(ExactString(18), unique=True)
    node_id: Mapped[int] = mapped_column(
        Integer, ForeignKey("nodes.id", ondelete="CASCADE"), index=True
    )
    extra: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    internal_info: Mapped[dict[str, Any]] = mapped_column(
        JSON, default=dict
    )
    local_link_connection: Mapped[dict[str, Any]] = mapped_column(
        JSON, default=dict
    )
    pxe_enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    physical_network: Mapped[str | None] = mapped_column(ExactString(64))
    is_smartnic: Mapped[bool] = mapped_column(Boolean, default=False)
    #: API 1.88, 1.97, 1.100, 1.101 and 1.111.
    name: Mapped[str | None] = mapped_column(ExactString(255), unique=True)
    description: Mapped[str | None] = mapped_column(ExactString(255))
    vendor: Mapped[str | None] = mapped_column(ExactString(32))
    category: Mapped[str | None] = mapped_column(ExactString(80))
    available_for_dynamic_portgroup: Mapped[bool] = mapped_column(
        Boolean, default=True)
    created_at: Mapped[datetime.datetime] = mapped_column(
        DateTime, default=utcnow
    )
    updated_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class NodeVif(Base):
    """A virtual network interface (VIF) attached to a node."""

    __tablename__ = "node_vifs"

    node_id: Mapped[int] = mapped_column(
        Integer, ForeignKey("nodes.id", ondelete="CASCADE"), primary_key=True
    )
    vif_id: Mapped[str] = mapped_column(ExactString(255), primary_key=True)
    created_at: Mapped[datetime.datetime] = mapped_column(
        DateTime, default=utcnow
    )


class AllocationChange(Base):
    """One committed change of an allocation (the watch extension): the
    allocation as the change left it (as it was, for ``deleted``).
    Written by triggers on ``allocations`` in the change's transaction
    (migration 0017); ``seq``, the cursor, is handed out once committed
    (``allocation/watch/log.py``)."""

    __tablename__ = "allocation_changes"
    __table_args__ = (
        UniqueConstraint("seq", name="allocation_changes_seq_key"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    seq: Mapped[int | None] = mapped_column(BigInteger)
    sequenced_at: Mapped[datetime.datetime | None] = mapped_column(
        PreciseDateTime)
    op: Mapped[str] = mapped_column(ExactString(8))
    allocation_id: Mapped[int] = mapped_column(Integer)
    uuid: Mapped[str] = mapped_column(ExactString(36))
    name: Mapped[str | None] = mapped_column(ExactString(255))
    state: Mapped[str] = mapped_column(ExactString(15))
    node_uuid: Mapped[str | None] = mapped_column(ExactString(36))
    owner: Mapped[str | None] = mapped_column(ExactString(255))
    resource_class: Mapped[str | None] = mapped_column(ExactString(80))
    group_name: Mapped[str | None] = mapped_column(ExactString(255))
    last_error: Mapped[str | None] = mapped_column(ExactText())
    extra: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    traits: Mapped[list[str] | None] = mapped_column(JSON)
    lease_expires_at: Mapped[datetime.datetime | None] = mapped_column(
        DateTime)
    queue_deadline: Mapped[datetime.datetime | None] = mapped_column(
        DateTime)


class AllocationChangeCursor(Base):
    """The one row (id 1) the sequencer holds while it hands out
    cursors: the last one handed out, and the highest one the retention
    removed."""

    __tablename__ = "allocation_change_cursor"

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=False)
    last_seq: Mapped[int] = mapped_column(BigInteger)
    pruned_through: Mapped[int] = mapped_column(BigInteger)
