"""The typed bare metal allocation client.

Build one with a constructor that matches what you have:

* :meth:`Client.from_endpoint` - just a URL (no authentication), e.g. a
  standalone Ironic with ``auth_strategy = noauth``;
* :meth:`Client.from_session` - an existing keystoneauth1 session;
* :meth:`Client.from_cloud` - a clouds.yaml cloud / ``OS_*`` variables,
  through openstacksdk's config loader (imported only when used);
* :meth:`Client.from_client_manager` - an osc-lib ClientManager (the
  ``openstack`` CLI plugin).

See :mod:`baremetal_allocclient.v1.transport` for how API versions are
negotiated (one HTTP request per call when the server is recent enough).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session

from baremetal_allocclient import exceptions
from baremetal_allocclient.v1 import (
    pagination,
    resources,
    retries,
    transport,
    versions,
    waiting,
)
from baremetal_allocclient.v1.resources import Allocation, Node

LOG = logging.getLogger(__name__)

SERVICE_TYPE: Final = "baremetal"
CLIENT_NAME: Final = "baremetal-allocclient"


class _Unset:
    """Marker type for "argument not given" where ``None`` means remove."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


#: Default of ``update_allocation(name=...)``: leave the name unchanged.
UNSET: Final = _Unset()

VersionArg = str | tuple[int, int] | None


def _pointer(key: str) -> str:
    """Escape a key as one JSON pointer segment (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def _strings(name: str, values: Iterable[str] | None) -> list[str] | None:
    if values is None:
        return None
    if isinstance(values, str):
        raise exceptions.InvalidArgument(
            f"{name} must be a list of strings, not one string"
        )
    items = list(values)
    for item in items:
        if not isinstance(item, str) or not item:
            raise exceptions.InvalidArgument(
                f"{name} must contain non-empty strings, got {item!r}"
            )
    return items


def _prefer_wait_header(
    seconds: float | None, request_timeout: float | None
) -> dict[str, str] | None:
    """``Prefer: wait=N`` for whole seconds N >= 1 (RFC 7240).

    N stays a second below the per-request timeout: a held answer that
    timed out on the client would leave an allocation the caller never
    learned about.
    """
    if seconds is None:
        return None
    if request_timeout is not None:
        seconds = min(seconds, request_timeout - 1)
    if seconds < 1:
        return None
    return {"Prefer": f"wait={int(seconds)}"}


def _one_interface(value: str | list[str] | None) -> str | None:
    """openstacksdk may give a list of interfaces; use the preferred one."""
    if isinstance(value, list):
        return value[0] if value else None
    return value


class Client:
    """Reserve and release bare metal nodes through the Allocation API.

    Args:
        adapter: a keystoneauth1 Adapter for service type ``baremetal``.
        api_version: pin a version (``"1.58"``) or ``None``/``"latest"``
            to use the highest version both sides support.
        retry_policy: budget for transient failures (503, refused
            connections, 409 "node is locked").
        clock, sleep: injected time sources; tests pass fakes.
    """

    def __init__(
        self,
        adapter: ks_adapter.Adapter,
        *,
        api_version: VersionArg = None,
        retry_policy: retries.RetryPolicy | None = None,
        clock: waiting.Clock = time.monotonic,
        sleep: waiting.Sleep = time.sleep,
    ) -> None:
        self._transport = transport.Transport(
            adapter,
            api_version=api_version,
            retry_policy=retry_policy,
            sleep=sleep,
        )
        self._clock = clock
        self._sleep = sleep

    # -- constructors ---------------------------------------------------

    @classmethod
    def from_session(
        cls,
        session: ks_session.Session,
        *,
        endpoint_override: str | None = None,
        interface: str | None = None,
        region_name: str | None = None,
        api_version: VersionArg = None,
        retry_policy: retries.RetryPolicy | None = None,
    ) -> Client:
        """Build a client on an existing keystoneauth1 session.

        Without ``endpoint_override`` the endpoint comes from the session's
        auth plugin (service catalog or the plugin's own endpoint).
        """
        adapter = ks_adapter.Adapter(
            session,
            service_type=SERVICE_TYPE,
            interface=interface,
            region_name=region_name,
            endpoint_override=endpoint_override,
            client_name=CLIENT_NAME,
        )
        return cls(adapter, api_version=api_version, retry_policy=retry_policy)

    @classmethod
    def from_endpoint(
        cls,
        url: str,
        *,
        api_version: VersionArg = None,
        verify: bool | str = True,
        cert: str | tuple[str, str] | None = None,
        timeout: float | None = None,
        retry_policy: retries.RetryPolicy | None = None,
    ) -> Client:
        """Build an unauthenticated client for one endpoint URL.

        ``url`` may end in ``/v1`` or not.  ``verify`` is a boolean or a CA
        bundle path; ``timeout`` is per request, in seconds.
        """
        if not isinstance(url, str) or not url.startswith(
            ("http://", "https://")
        ):
            raise exceptions.InvalidArgument(
                f"Endpoint must be an http(s) URL, got {url!r}"
            )
        session = ks_session.Session(verify=verify, cert=cert, timeout=timeout)
        return cls.from_session(
            session,
            endpoint_override=url,
            api_version=api_version,
            retry_policy=retry_policy,
        )

    @classmethod
    def from_cloud(
        cls,
        cloud: str | None = None,
        *,
        api_version: VersionArg = None,
        retry_policy: retries.RetryPolicy | None = None,
        **overrides: Any,
    ) -> Client:
        """Build a client from clouds.yaml and ``OS_*`` variables.

        Uses openstacksdk's config loader, so ``auth_type`` ``none``,
        ``http_basic`` and ``password``, ``baremetal_endpoint_override``,
        ``region_name``, ``interface`` and TLS options behave as in the
        ``openstack`` CLI.  ``overrides`` are passed to the loader
        (e.g. ``auth={"endpoint": url}``, ``auth_type="none"``).  A
        ``baremetal_api_version`` with a minor part (``1.58``) pins the
        version unless ``api_version`` is given.
        """
        # Imported here: openstack.config costs ~0.2 s at start-up, and only
        # this constructor needs it.
        import openstack.config
        import openstack.exceptions
        from keystoneauth1 import exceptions as ks_exc

        try:
            config = openstack.config.OpenStackConfig()
            region = config.get_one(cloud=cloud, **overrides)
            session = region.get_session()
        except (
            openstack.exceptions.SDKException,
            ks_exc.ClientException,
        ) as exc:
            raise exceptions.ConfigurationError(
                f"Invalid cloud configuration: {exc}"
            ) from exc
        if api_version is None:
            configured = region.get_api_version(SERVICE_TYPE)
            if configured and "." in str(configured):
                api_version = str(configured)
        return cls.from_session(
            session,
            endpoint_override=region.get_endpoint(SERVICE_TYPE),
            interface=_one_interface(region.get_interface(SERVICE_TYPE)),
            region_name=region.get_region_name(SERVICE_TYPE),
            api_version=api_version,
            retry_policy=retry_policy,
        )

    @classmethod
    def from_client_manager(
        cls,
        instance: Any,
        *,
        api_version: VersionArg = None,
        retry_policy: retries.RetryPolicy | None = None,
    ) -> Client:
        """Build a client from an osc-lib ``ClientManager``.

        Uses its session, interface and region, and the endpoint the
        manager resolves (``--os-endpoint``, ``auth_type none`` endpoint or
        the catalog).
        """
        region_name = getattr(instance, "region_name", None)
        interface = getattr(instance, "interface", None)
        endpoint = instance.get_endpoint_for_service_type(
            SERVICE_TYPE,
            region_name=region_name,
            interface=interface or "public",
        )
        return cls.from_session(
            instance.session,
            endpoint_override=endpoint,
            interface=interface,
            region_name=region_name,
            api_version=api_version,
            retry_policy=retry_policy,
        )

    # -- versions -------------------------------------------------------

    @property
    def api_version(self) -> tuple[int, int]:
        """API version in use (the pin, or the negotiated version).

        Negotiated lazily, once per client: if no request has told the
        client the server's range yet, this reads the root document.
        """
        return self._transport.api_version

    @property
    def server_version_range(
        self,
    ) -> tuple[tuple[int, int], tuple[int, int]] | None:
        """The server's ``(min, max)`` API versions, once known."""
        return self._transport.server_range

    def discover_version(self) -> tuple[int, int]:
        """Ask the server for its version range now; return the version.

        Optional: calls learn the range from response headers anyway.
        """
        if self._transport.pinned is None:
            self._transport.discover()
        return self.api_version

    @property
    def endpoint(self) -> str:
        """The API root URL requests are sent to."""
        return self._transport.root

    # -- helpers --------------------------------------------------------

    def _allocation(self, response: Any) -> Allocation:
        return Allocation.from_wire(self._transport.json(response))

    @staticmethod
    def _fields_feature(
        fields: Sequence[str] | None, default: versions.Feature
    ) -> versions.Feature:
        if fields is not None and "owner" in fields:
            return versions.ALLOCATION_OWNER
        return default

    # -- allocations ----------------------------------------------------

    def create_allocation(
        self,
        resource_class: str | None = None,
        *,
        traits: Iterable[str] = (),
        candidate_nodes: Iterable[str] = (),
        name: str | None = None,
        uuid: str | None = None,
        extra: Mapping[str, Any] | None = None,
        node: str | None = None,
        owner: str | None = None,
        prefer_wait: float | None = None,
    ) -> Allocation:
        """Request a node: ``POST /v1/allocations``.

        The server answers at once with the allocation in ``allocating``;
        use :meth:`wait_for_allocation` or :meth:`allocate`.  ``node``
        backfills an allocation for a node that is already deployed (API
        1.58); ``resource_class`` may then be omitted.  ``owner`` needs
        API 1.60.

        ``prefer_wait`` (whole seconds) sends ``Prefer: wait=N`` (RFC
        7240): the reference server then holds its answer until the
        allocation settled, up to N seconds, and usually returns it
        ``active`` or ``error`` in this one request.  Ironic ignores the
        header and answers ``allocating``, so it is always safe to send.
        """
        if resource_class is None and node is None:
            raise exceptions.InvalidArgument(
                "resource_class is required unless node is given"
            )
        body: dict[str, Any] = {}
        if resource_class is not None:
            body["resource_class"] = resource_class
        trait_list = _strings("traits", traits)
        if trait_list:
            body["traits"] = trait_list
        candidates = _strings("candidate_nodes", candidate_nodes)
        if candidates:
            body["candidate_nodes"] = candidates
        for key, value in (
            ("name", name),
            ("uuid", uuid),
            ("node", node),
            ("owner", owner),
        ):
            if value is not None:
                body[key] = value
        if extra is not None:
            body["extra"] = dict(extra)
        feature = versions.ALLOCATIONS
        if owner is not None:
            feature = versions.ALLOCATION_OWNER
        elif node is not None:
            feature = versions.ALLOCATION_BACKFILL
        response = self._transport.request(
            "POST", "/v1/allocations", feature=feature, json=body,
            headers=_prefer_wait_header(
                prefer_wait, self._transport.request_timeout
            ),
        )
        return self._allocation(response)

    def get_allocation(
        self, ident: str, *, fields: Sequence[str] | None = None
    ) -> Allocation:
        """Fetch one allocation by UUID or name (``fields=`` optional)."""
        names = resources.validate_fields(Allocation, fields)
        response = self._transport.request(
            "GET",
            "/v1/allocations/" + transport.quote(ident),
            feature=self._fields_feature(names, versions.ALLOCATIONS),
            params=pagination.build_query(
                {"fields": names}, limit=None, marker=None
            ),
        )
        return self._allocation(response)

    def list_allocations(
        self,
        *,
        state: str | None = None,
        resource_class: str | None = None,
        node: str | None = None,
        owner: str | None = None,
        fields: Sequence[str] | None = None,
        limit: int | None = None,
        marker: str | None = None,
        sort_key: str | None = None,
        sort_dir: str | None = None,
        page_size: int | None = None,
    ) -> Iterator[Allocation]:
        """Iterate over allocations, fetching pages lazily.

        Filters (``state``, ``resource_class``, ``node``, ``owner``) and
        sorting are applied by the server.  ``limit`` caps the total number
        yielded; ``page_size`` is the ``limit`` of each page request
        (default: the server's maximum).  ``marker`` starts after that
        allocation UUID.  Pages are followed through the server's ``next``
        links (see :mod:`~baremetal_allocclient.v1.pagination`).
        """
        pagination.check_positive("limit", limit)
        pagination.check_positive("page_size", page_size)
        if sort_dir is not None and sort_dir not in ("asc", "desc"):
            raise exceptions.InvalidArgument(
                f"sort_dir must be 'asc' or 'desc', got {sort_dir!r}"
            )
        names = resources.validate_fields(Allocation, fields)
        feature = self._fields_feature(names, versions.ALLOCATIONS)
        if owner is not None:
            feature = versions.ALLOCATION_OWNER
        filters = {
            "state": state,
            "resource_class": resource_class,
            "node": node,
            "owner": owner,
            "fields": names,
            "sort_key": sort_key,
            "sort_dir": sort_dir,
        }
        return self._iterate(filters, feature, limit, marker, page_size)

    def _iterate(
        self,
        filters: Mapping[str, Any],
        feature: versions.Feature,
        limit: int | None,
        marker: str | None,
        page_size: int | None,
    ) -> Iterator[Allocation]:
        remaining = limit
        while remaining is None or remaining > 0:
            params = pagination.build_query(
                filters,
                limit=pagination.page_limit(page_size, remaining),
                marker=marker,
            )
            response = self._transport.request(
                "GET", "/v1/allocations", feature=feature, params=params
            )
            items, next_link = pagination.items_of(
                self._transport.json(response), "allocations"
            )
            for item in items:
                if remaining is not None:
                    if remaining <= 0:
                        return
                    remaining -= 1
                yield Allocation.from_wire(item)
            new_marker = pagination.marker_from_next(next_link)
            if not items or new_marker is None or new_marker == marker:
                return
            marker = new_marker

    def update_allocation(
        self,
        ident: str,
        *,
        name: str | _Unset | None = UNSET,
        set_extra: Mapping[str, Any] | None = None,
        unset_extra: Iterable[str] = (),
    ) -> Allocation:
        """Change an allocation's name and extra (API 1.57, JSON patch).

        ``name=None`` removes the name; ``set_extra`` adds or replaces keys
        of ``extra``; ``unset_extra`` removes keys.
        """
        patch: list[dict[str, Any]] = []
        if name is None:
            patch.append({"op": "remove", "path": "/name"})
        elif not isinstance(name, _Unset):
            patch.append({"op": "add", "path": "/name", "value": name})
        for key, value in (set_extra or {}).items():
            patch.append(
                {"op": "add", "path": "/extra/" + _pointer(key),
                 "value": value}
            )
        removed = _strings("unset_extra", unset_extra) or []
        for key in removed:
            patch.append({"op": "remove", "path": "/extra/" + _pointer(key)})
        if not patch:
            raise exceptions.InvalidArgument(
                "Nothing to update: give name, set_extra or unset_extra"
            )
        response = self._transport.request(
            "PATCH",
            "/v1/allocations/" + transport.quote(ident),
            feature=versions.ALLOCATION_UPDATE,
            json=patch,
        )
        return self._allocation(response)

    def delete_allocation(
        self, ident: str, *, ignore_missing: bool = False
    ) -> None:
        """Delete an allocation, releasing its node.

        With ``ignore_missing`` a missing allocation is not an error.
        """
        self._delete(
            "/v1/allocations/" + transport.quote(ident), ignore_missing
        )

    def get_node_allocation(
        self, node: str, *, fields: Sequence[str] | None = None
    ) -> Allocation:
        """Fetch the allocation of a node (UUID or name)."""
        names = resources.validate_fields(Allocation, fields)
        response = self._transport.request(
            "GET",
            "/v1/nodes/" + transport.quote(node) + "/allocation",
            feature=self._fields_feature(names, versions.ALLOCATIONS),
            params=pagination.build_query(
                {"fields": names}, limit=None, marker=None
            ),
        )
        return self._allocation(response)

    def delete_node_allocation(
        self, node: str, *, ignore_missing: bool = False
    ) -> None:
        """Delete the allocation of a node (UUID or name)."""
        self._delete(
            "/v1/nodes/" + transport.quote(node) + "/allocation",
            ignore_missing,
        )

    def _delete(self, path: str, ignore_missing: bool) -> None:
        """DELETE an allocation resource; a 404 is fine when asked."""
        try:
            self._transport.request(
                "DELETE", path, feature=versions.ALLOCATIONS
            )
        except exceptions.NotFound:
            if not ignore_missing:
                raise

    # -- nodes ----------------------------------------------------------

    def get_node(
        self, ident: str, *, fields: Sequence[str] | None = None
    ) -> Node:
        """Fetch the read-only view of a node by UUID or name."""
        names = resources.validate_fields(Node, fields)
        response = self._transport.request(
            "GET",
            "/v1/nodes/" + transport.quote(ident),
            feature=versions.NODES,
            params=pagination.build_query(
                {"fields": names}, limit=None, marker=None
            ),
        )
        return Node.from_wire(self._transport.json(response))

    # -- capacity (an extension of baremetal-alloc-server) ---------------

    def get_allocation_capacity(
        self, resource_class: str | None = None
    ) -> list[dict[str, Any]]:
        """Per resource class: total, allocated, reserved (with
        ``reserved_by_reason``) and free nodes.

        ``GET /v1/allocation_capacity`` exists only on
        baremetal-alloc-server (Ironic answers 404 -> NotFound).
        """
        params = {"resource_class": resource_class} if resource_class else {}
        response = self._transport.request(
            "GET", "/v1/allocation_capacity", feature=versions.ALLOCATIONS,
            params=params,
        )
        body = self._transport.json(response)
        rows = body.get("capacity") if isinstance(body, dict) else None
        if not isinstance(rows, list):
            raise exceptions.ClientError(
                "unexpected capacity document from the server"
            )
        return [dict(row) for row in rows if isinstance(row, dict)]

    # -- waiting --------------------------------------------------------

    def wait_for_allocation(
        self,
        allocation: Allocation | str,
        *,
        timeout: float | None = waiting.DEFAULT_TIMEOUT,
        on_progress: waiting.ProgressCallback | None = None,
    ) -> Allocation:
        """Wait until an allocation is ``active`` and return it.

        ``allocation`` is an Allocation (e.g. from create) or a UUID/name.
        Polls with exponential backoff (0.05 s doubling to 2 s).

        Raises:
            AllocationFailed: it ended in ``error`` (carries last_error).
            WaitTimeout: still allocating after ``timeout`` seconds.
        """
        if isinstance(allocation, Allocation):
            initial: Allocation | None = allocation
            ident = allocation.ident
        else:
            initial = None
            ident = allocation
        return waiting.wait_for_allocation(
            lambda: self.get_allocation(ident),
            initial,
            timeout=timeout,
            on_progress=on_progress,
            clock=self._clock,
            sleep=self._sleep,
        )

    def wait_for_allocations(
        self,
        allocations: Iterable[Allocation | str],
        *,
        timeout: float | None = waiting.DEFAULT_TIMEOUT,
        raise_on_error: bool = True,
        on_progress: waiting.ProgressCallback | None = None,
    ) -> list[Allocation]:
        """Wait for many allocations with one list request per poll round.

        Identifiers given as strings are read once first (to learn their
        UUID and resource class).  Returns the final allocations in order.
        See :mod:`~baremetal_allocclient.v1.waiting` for the request count.

        Raises:
            AllocationFailed: if ``raise_on_error`` and any ended in
                ``error`` (after all settled; ``.results`` has them all).
            WaitTimeout: some were still allocating after ``timeout``.
        """
        known: list[Allocation] = []
        for item in allocations:
            if isinstance(item, Allocation) and item.uuid and item.state:
                known.append(item)
            else:
                ident = item.ident if isinstance(item, Allocation) else item
                known.append(self.get_allocation(ident))
        return waiting.wait_for_allocations(
            _ClientSource(self),
            known,
            timeout=timeout,
            raise_on_error=raise_on_error,
            on_progress=on_progress,
            clock=self._clock,
            sleep=self._sleep,
        )

    def allocate(
        self,
        resource_class: str | None = None,
        *,
        traits: Iterable[str] = (),
        candidate_nodes: Iterable[str] = (),
        name: str | None = None,
        uuid: str | None = None,
        extra: Mapping[str, Any] | None = None,
        node: str | None = None,
        owner: str | None = None,
        timeout: float | None = waiting.DEFAULT_TIMEOUT,
        on_progress: waiting.ProgressCallback | None = None,
    ) -> Allocation:
        """Create an allocation and wait until it is ``active``.

        The create asks the server to answer once the allocation settled
        (``prefer_wait``, at most :data:`waiting.PREFER_WAIT` seconds), so
        on the reference server this is usually one request; polling
        takes over when the answer is still ``allocating``.

        If waiting fails for any reason (``error`` state, timeout,
        interruption), the allocation created here is deleted before the
        error propagates, so a failed call leaves nothing behind.
        """
        created = self.create_allocation(
            resource_class,
            traits=traits,
            candidate_nodes=candidate_nodes,
            name=name,
            uuid=uuid,
            extra=extra,
            node=node,
            owner=owner,
            prefer_wait=waiting.prefer_wait_for(timeout),
        )
        try:
            return self.wait_for_allocation(
                created, timeout=timeout, on_progress=on_progress
            )
        except BaseException:
            try:
                self.delete_allocation(created.ident, ignore_missing=True)
            except exceptions.ClientError as cleanup_error:
                LOG.warning(
                    "Could not delete allocation %s after a failed "
                    "allocate(): %s", created.ident, cleanup_error,
                )
            raise


class _ClientSource:
    """Adapts a Client to :class:`waiting.AllocationSource`."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def get(self, uuid: str) -> Allocation:
        return self._client.get_allocation(uuid)

    def allocating_uuids(self, resource_class: str | None) -> set[str]:
        return {
            str(item.uuid)
            for item in self._client.list_allocations(
                state=waiting.ALLOCATING,
                resource_class=resource_class,
                fields=("uuid",),
            )
        }

    def fetch_settled(
        self, allocations: Sequence[Allocation]
    ) -> list[Allocation]:
        """One list per resource class (newest first, stops early)."""
        groups: dict[str | None, set[str]] = {}
        for item in allocations:
            groups.setdefault(item.resource_class, set()).add(str(item.uuid))
        found: dict[str, Allocation] = {}
        for resource_class, wanted in groups.items():
            if len(wanted) > 1 and resource_class is not None:
                missing = set(wanted)
                for item in self._client.list_allocations(
                    resource_class=resource_class,
                    sort_key="created_at",
                    sort_dir="desc",
                ):
                    if item.uuid in missing:
                        found[item.uuid] = item
                        missing.discard(item.uuid)
                        if not missing:
                            break
                wanted = missing
            for uuid in wanted:
                found[uuid] = self._client.get_allocation(uuid)
        return [found[str(item.uuid)] for item in allocations]
