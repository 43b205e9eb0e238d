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

import datetime
import itertools
import json
import logging
import random
import time
import types
import uuid as uuidlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session

from baremetal_allocclient import exceptions, groups, leases
from baremetal_allocclient.constraints import (
    EXPLAIN_PATH,
    EXTENSION,
    EXTENSION_HEADER,
    Constraints,
    Selection,
)
from baremetal_allocclient.constraints import funnel as funnel_of
from baremetal_allocclient.v1 import (
    budget,
    grouping,
    interrupts,
    leasing,
    pagination,
    queueing,
    reservation,
    resources,
    retries,
    selecting,
    transport,
    versions,
    waiting,
)
from baremetal_allocclient.v1.resources import Allocation, Node

LOG = logging.getLogger(__name__)

SERVICE_TYPE: Final = "baremetal"
CLIENT_NAME: Final = "baremetal-allocclient"
#: The reference server's capacity extension (Ironic answers 404).
CAPACITY_PATH: Final = "/v1/allocation_capacity"


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


def _matches_request(found: Allocation, body: Mapping[str, Any]) -> bool:
    """Whether an existing allocation is the one ``body`` asked for."""
    wanted_class = body.get("resource_class", found.resource_class)
    return (
        found.resource_class == wanted_class
        and found.name == body.get("name")
        and sorted(found.traits or ()) == sorted(body.get("traits", ()))
    )


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
    """

    def __init__(
        self,
        adapter: ks_adapter.Adapter,
        *,
        api_version: VersionArg = None,
        retry_policy: retries.RetryPolicy | None = None,
        _clock: waiting.Clock = time.monotonic,
        _sleep: waiting.Sleep = time.sleep,
        _rng: random.Random | None = None,
    ) -> None:
        # _clock, _sleep and _rng: time and jitter sources for tests, not
        # part of the API.
        self._transport = transport.Transport(
            adapter,
            api_version=api_version,
            retry_policy=retry_policy,
            sleep=_sleep,
        )
        self._clock = _clock
        self._sleep = _sleep
        self._v1_doc: Any = None
        #: Whether a create asked the server for a place in line (then
        #: allocation reads ask it for the position too).
        self._queue_used = False
        #: Jitter of the pauses between attempts to find capacity.
        self._rng: random.Random = _rng or random.SystemRandom()

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

    # -- life cycle -----------------------------------------------------

    def close(self) -> None:
        """Close the HTTP connections of this client's session.

        The client must not be used afterwards.  Also called on leaving
        ``with Client.from_endpoint(url) as client:``.
        """
        session: Any = getattr(self._transport.adapter, "session", None)
        http: Any = getattr(session, "session", None)
        if http is not None and hasattr(http, "close"):
            http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: types.TracebackType | None,
    ) -> None:
        self.close()

    def sleep(self, seconds: float) -> None:
        """Pause on this client's sleep (injected by tests)."""
        self._sleep(seconds)

    def deadline(self, timeout: float | None) -> budget.Deadline:
        """A time budget on this client's clock (``None``: no limit)."""
        return budget.Deadline(timeout, clock=self._clock)

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
        deadline: budget.Deadline | None = None,
        constraints: Constraints | None = None,
        lease: datetime.timedelta | str | None = None,
        queue: bool = False,
    ) -> Allocation:
        """Request a node: ``POST /v1/allocations``.

        Without ``uuid`` the client chooses one (a random UUID), so the
        request can be repeated safely: when an answer is lost (connection
        reset, timeout, 503) the create is sent again, and if the server
        answers 409 because the first attempt did create that UUID, the
        existing allocation is fetched and returned.  One call makes at
        most one allocation.

        ``constraints`` (forbidden traits, node properties, conductor
        group, shard, node owner/lessee, node name) go to a server that
        advertises the constraints extension; otherwise the SDK selects
        the nodes first and sends them as ``candidate_nodes``, raising
        NoMatchingNodes, before creating anything, when none qualify
        (see :mod:`~baremetal_allocclient.v1.selecting`).

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
        The hold never exceeds what is left of ``deadline`` (less
        :data:`budget.HOLD_MARGIN`), and no attempt outlives it, nor
        does a request the create needs first (the extension discovery,
        the node listing of a client-side selection).  Without
        ``deadline``, the current operation's (:func:`budget.current`)
        applies.  A failure's ``outcome_unknown`` says whether the
        allocation may have been made.

        ``lease`` (a ``timedelta`` or ``"2h"``, ``"1h30m"``...) records
        when the allocation should be given back, in ``extra`` (see
        :mod:`baremetal_allocclient.leases`); :meth:`expire` or ``serve
        --expire-leases`` release it after that.

        ``queue`` asks to wait in line for capacity: the allocation stays
        ``allocating`` until a matching node is free, first come first
        served, at most what is left of ``deadline`` (or the server's
        maximum without one); then it ends in ``error``.  It needs the
        reference server's queue extension (:meth:`supports_queue`);
        against Ironic it raises InvalidArgument: use
        :meth:`allocate` with ``queue=True``, which retries instead.
        """
        if lease is not None:
            extra = leases.with_lease(extra, self._lease(lease),
                                      leases.utcnow())
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
        if uuid is None:
            uuid = str(uuidlib.uuid4())
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
        deadline = deadline or budget.current() or budget.unlimited(
            self._clock)
        with budget.bounded(deadline):
            return self._post_allocation(body, feature, deadline,
                                         prefer_wait, constraints, queue)

    def _post_allocation(
        self, body: dict[str, Any], feature: versions.Feature,
        deadline: budget.Deadline, prefer_wait: float | None,
        constraints: Constraints | None, queue: bool,
    ) -> Allocation:
        """Complete ``body`` with the extensions it needs and send it."""
        try:
            headers = self._create_headers(body, deadline, prefer_wait,
                                           constraints, queue)
        except exceptions.ClientError as exc:
            # Whatever a request before the create met, the create was
            # not sent: nothing was made.
            exc.outcome_unknown = False
            raise
        uuid = body["uuid"]
        try:
            response = self._transport.request(
                "POST", "/v1/allocations", feature=feature, json=body,
                headers=headers, deadline=deadline, idempotent=True,
            )
        except exceptions.Conflict as exc:
            if not exc.retried:
                raise
            # An earlier attempt's answer was lost; it may have made the
            # allocation.  Return it if it is the one we asked for.
            existing = self._made_by_earlier_attempt(uuid, body, deadline)
            if existing is None:
                raise
            return existing
        return self._allocation(response)

    def _create_headers(
        self, body: dict[str, Any], deadline: budget.Deadline,
        prefer_wait: float | None, constraints: Constraints | None,
        queue: bool,
    ) -> dict[str, str] | None:
        """The create's headers (``Prefer: wait``, the extensions it opts
        in to); adds the extensions' fields to ``body``.  The hold is
        computed last, from what the discovery left of ``deadline``."""
        opted_in: list[str] = []
        if constraints:
            opted_in += self._constrain(body, constraints)
        if queue:
            opted_in.append(self._enqueue(body, deadline))
        opted_in += [name for name in self._known_extensions()
                     if name not in opted_in]
        hold = None if prefer_wait is None else deadline.hold(prefer_wait)
        headers = _prefer_wait_header(hold, self._transport.request_timeout)
        if opted_in:
            headers = {**(headers or {}),
                       EXTENSION_HEADER: ", ".join(opted_in)}
        return headers

    def _enqueue(self, body: dict[str, Any],
                 deadline: budget.Deadline) -> str:
        """Add the queue extension's field to a create body; return the
        extension's name for the header."""
        if body.get("node") is not None:
            raise exceptions.InvalidArgument(
                "waiting in line does not apply to a backfill (node)")
        ceiling = queueing.advertised(self._v1_document())
        if ceiling is None:
            raise exceptions.InvalidArgument(
                "this server does not offer waiting in line (the queue "
                "extension); use allocate(..., queue=True), which "
                "retries instead")
        body["queue"] = queueing.queue_field(deadline.remaining(), ceiling)
        self._queue_used = True
        return queueing.EXTENSION

    def _made_by_earlier_attempt(
        self, uuid: str, body: Mapping[str, Any], deadline: budget.Deadline
    ) -> Allocation | None:
        """The allocation ``uuid`` if it matches the request ``body``."""
        try:
            found = self._get(uuid, deadline)
        except exceptions.NotFound:
            return None
        if not _matches_request(found, body):
            return None
        LOG.debug("Create of %s was retried; using the allocation made "
                  "by the first attempt", uuid)
        return found

    def get_allocation(
        self, ident: str, *, fields: Sequence[str] | None = None
    ) -> Allocation:
        """Fetch one allocation by UUID or name (``fields=`` optional)."""
        return self._get(ident, None, fields)

    def _get(
        self,
        ident: str,
        deadline: budget.Deadline | None,
        fields: Sequence[str] | None = None,
    ) -> Allocation:
        names = resources.validate_fields(Allocation, fields)
        # After a create that waits in line, the answer says the place;
        # a known constraints extension adds the funnel to last_error.
        opted_in = self._known_extensions()
        if self._queue_used and names is None:
            opted_in.append(queueing.EXTENSION)
        headers = ({EXTENSION_HEADER: ", ".join(opted_in)}
                   if opted_in else None)
        response = self._transport.request(
            "GET",
            "/v1/allocations/" + transport.quote(ident),
            feature=self._fields_feature(names, versions.ALLOCATIONS),
            params=pagination.build_query(
                {"fields": names}, limit=None, marker=None
            ),
            deadline=deadline, headers=headers,
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
        expired: bool | None = None,
        now: datetime.datetime | None = None,
        group: str | None = None,
    ) -> Iterator[Allocation]:
        """Iterate over allocations, fetching pages lazily.

        ``group`` keeps only the members of that group (see
        :meth:`allocate_group`); Ironic cannot filter on ``extra``, so
        this filter is applied here, to every page.

        Filters (``state``, ``resource_class``, ``node``, ``owner``) and
        sorting are applied by the server.  ``limit`` caps the total number
        yielded; ``page_size`` is the ``limit`` of each page request
        (default: the server's maximum).  ``marker`` starts after that
        allocation UUID.  Pages are followed through the server's ``next``
        links (see :mod:`~baremetal_allocclient.v1.pagination`).

        ``expired=True`` keeps only allocations whose lease ended by
        ``now`` (default: the current time), ``expired=False`` the others
        (with a running lease or none).  This filter runs on the client,
        over every page, with ``extra`` fetched; ``limit`` then counts
        what passes it.
        """
        if expired is not None:
            return self._filter_expired(
                expired, now or leases.utcnow(), limit,
                state=state, resource_class=resource_class, node=node,
                owner=owner, marker=marker, sort_key=sort_key,
                sort_dir=sort_dir, page_size=page_size, group=group,
                fields=None if fields is None else [*fields, "extra"],
            )
        pagination.check_positive("limit", limit)
        pagination.check_positive("page_size", page_size)
        if state is not None and state not in resources.ALLOCATION_STATES:
            raise exceptions.InvalidArgument(
                f"state must be one of "
                f"{', '.join(resources.ALLOCATION_STATES)}, got {state!r}"
            )
        if sort_dir is not None and sort_dir not in ("asc", "desc"):
            raise exceptions.InvalidArgument(
                f"sort_dir must be 'asc' or 'desc', got {sort_dir!r}"
            )
        names = resources.validate_fields(Allocation, fields)
        feature = self._fields_feature(names, versions.ALLOCATIONS)
        if owner is not None:
            feature = versions.ALLOCATION_OWNER
        if group is not None and names is not None and "extra" not in names:
            names = (*names, "extra")
        filters = {
            "state": state,
            "resource_class": resource_class,
            "node": node,
            "owner": owner,
            "fields": names,
            "sort_key": sort_key,
            "sort_dir": sort_dir,
        }
        if group is None:
            return self._iterate(filters, feature, limit, marker, page_size)
        members = (a for a in self._iterate(filters, feature, None, marker,
                                            page_size)
                   if groups.group_of(a.extra) == group)
        return itertools.islice(members, limit)

    def _filter_expired(
        self, expired: bool, now: datetime.datetime, limit: int | None,
        **query: Any,
    ) -> Iterator[Allocation]:
        pagination.check_positive("limit", limit)
        listed = self.list_allocations(**query)
        chosen = (item for item in listed
                  if leases.is_expired(item.extra, now) == expired)
        return itertools.islice(chosen, limit)

    def _iterate(
        self,
        filters: Mapping[str, Any],
        feature: versions.Feature,
        limit: int | None,
        marker: str | None,
        page_size: int | None,
        deadline: budget.Deadline | None = None,
    ) -> Iterator[Allocation]:
        remaining = limit
        while remaining is None or remaining > 0:
            params = pagination.build_query(
                filters,
                limit=pagination.page_limit(page_size, remaining),
                marker=marker,
            )
            response = self._transport.request(
                "GET", "/v1/allocations", feature=feature, params=params,
                deadline=deadline,
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
        self,
        ident: str,
        *,
        ignore_missing: bool = False,
        deadline: budget.Deadline | None = None,
    ) -> bool:
        """Delete an allocation, releasing its node.

        With ``ignore_missing`` a missing allocation is not an error.
        Returns True if it was deleted, False if it did not exist.
        """
        return self._delete(
            "/v1/allocations/" + transport.quote(ident), ignore_missing,
            deadline,
        )

    # -- leases (see baremetal_allocclient.leases) ------------------------

    @staticmethod
    def _lease(lease: datetime.timedelta | str) -> datetime.timedelta:
        try:
            return leases.as_duration(lease)
        except leases.LeaseError as exc:
            raise exceptions.InvalidArgument(str(exc)) from None

    def renew_lease(
        self, allocation: Allocation | str,
        lease: datetime.timedelta | str,
    ) -> Allocation:
        """Give an allocation a lease ending ``lease`` from now (JSON patch
        of the lease keys of ``extra``; other keys are left as they are).

        Renew before the lease ends: a lease that already ended may be
        expired by a concurrent :meth:`expire` (NotFound then).
        """
        ident = allocation.ident if isinstance(
            allocation, Allocation) else allocation
        return self.update_allocation(ident, set_extra=leases.lease_extra(
            self._lease(lease), leases.utcnow()))

    def expire(
        self,
        *,
        dry_run: bool = False,
        undeploy: bool = False,
        resource_class: str | None = None,
        owner: str | None = None,
    ) -> leasing.ExpireReport:
        """Release the allocations whose lease ended and whose node is not
        deployed; report the deployed ones (torn down with ``undeploy``).

        Safe to run from several places at once; see
        :mod:`~baremetal_allocclient.v1.leasing` for what is guaranteed.
        ``dry_run`` changes nothing and says what would be done.
        """
        return leasing.expire(self, dry_run=dry_run, undeploy=undeploy,
                              resource_class=resource_class, owner=owner)

    def undeploy_node(self, node: str) -> None:
        """Ask for a node's tear-down (provision target ``deleted``);
        the server deletes its allocation when the tear-down ends."""
        self._transport.request(
            "PUT", "/v1/nodes/" + transport.quote(node) + "/states/provision",
            feature=versions.NODES, json={"target": "deleted"},
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
    ) -> bool:
        """Delete the allocation of a node (UUID or name); False if there
        was none (with ``ignore_missing``)."""
        return self._delete(
            "/v1/nodes/" + transport.quote(node) + "/allocation",
            ignore_missing,
        )

    def _delete(
        self,
        path: str,
        ignore_missing: bool,
        deadline: budget.Deadline | None = None,
    ) -> bool:
        """DELETE an allocation resource; a 404 is fine when asked."""
        try:
            self._transport.request(
                "DELETE", path, feature=versions.ALLOCATIONS,
                deadline=deadline,
            )
        except exceptions.NotFound:
            if not ignore_missing:
                raise
            return False
        return True

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

    # -- constraints (see v1/selecting.py) -------------------------------

    def _v1_document(self) -> Any:
        """``GET /v1`` (where extensions are advertised), read once."""
        if self._v1_doc is None:
            response = self._transport.request(
                "GET", "/v1", feature=versions.NODES)
            self._v1_doc = self._transport.json(response)
        return self._v1_doc

    def _known_extensions(self) -> list[str]:
        """Extensions to opt into on every allocation request: the
        constraints extension once ``GET /v1`` was read (for a constrained,
        grouped or queued call) and advertised it, so that ``last_error``
        of a failure carries the selection funnel.  Never a request of
        its own: a client that did not discover reads Ironic's text."""
        if self._v1_doc is not None and selecting.extension_advertised(
                self._v1_doc):
            return [EXTENSION]
        return []

    def supports_constraints(self) -> bool:
        """Whether the server evaluates constraints itself (the reference
        server's extension, advertised in ``GET /v1``); asked once."""
        return selecting.extension_advertised(self._v1_document())

    def supports_groups(self) -> bool:
        """Whether the server reserves a whole group in one transaction
        (the reference server's groups extension, advertised in ``GET
        /v1``); asked once."""
        return grouping.extension_advertised(self._v1_document())

    def supports_queue(self) -> bool:
        """Whether the server keeps allocations waiting in line for
        capacity (the reference server's queue extension, advertised in
        ``GET /v1``); asked once."""
        return queueing.advertised(self._v1_document()) is not None

    def _selection(self, body: Mapping[str, Any],
                   constraints: Constraints) -> Selection:
        return Selection(
            resource_class=str(body.get("resource_class") or ""),
            traits=tuple(body.get("traits") or ()),
            candidate_nodes=tuple(body.get("candidate_nodes") or ()),
            owner=body.get("owner"), constraints=constraints)

    def _constrain(self, body: dict[str, Any],
                   constraints: Constraints) -> list[str]:
        """Add ``constraints`` to an allocation body: as the extension's
        field (returning its name for the header), or as prefiltered
        candidates."""
        if body.get("node") is not None:
            raise exceptions.InvalidArgument(
                "constraints do not apply to a backfill (node)")
        if self.supports_constraints():
            body["constraints"] = constraints.to_wire()
            return [EXTENSION]
        plan = self._prefilter(self._selection(body, constraints))
        # With require_node_name the plan holds that one node only.
        body["candidate_nodes"] = list(plan.candidates)
        if plan.preferred and "name" not in body:
            # Ironic tries the node named like the allocation first.
            body["name"] = constraints.node_name
        return []

    def _prefilter(self, selection: Selection) -> selecting.Plan:
        """Client-side selection: one narrow paged listing; only when
        nothing survives, a second listing of the whole resource class
        to say why."""
        narrow = list(selecting.iter_nodes(
            self._transport, selecting.list_filters(selection, True)))
        try:
            return selecting.plan(selection, narrow)
        except exceptions.NoMatchingNodes:
            broad = list(selecting.iter_nodes(
                self._transport, selecting.list_filters(selection, False)))
            return selecting.plan(selection, broad)

    def explain(
        self,
        resource_class: str,
        *,
        traits: Iterable[str] = (),
        candidate_nodes: Iterable[str] = (),
        owner: str | None = None,
        constraints: Constraints | None = None,
    ) -> dict[str, Any]:
        """The selection funnel of an allocation request, reserving
        nothing: ``{"resource_class", "funnel": [{"step", "count"}...],
        "candidates", "first_empty"}``.  One request on the reference
        server; computed from the node list on Ironic."""
        body: dict[str, Any] = {"resource_class": resource_class}
        for key, values in (("traits", traits),
                            ("candidate_nodes", candidate_nodes)):
            listed = _strings(key, values)
            if listed:
                body[key] = listed
        if owner is not None:
            body["owner"] = owner
        wanted = constraints or Constraints()
        selection = self._selection(body, wanted)
        if self.supports_constraints():
            if wanted:
                body["constraints"] = wanted.to_wire()
            response = self._transport.request(
                "POST", EXPLAIN_PATH, feature=versions.ALLOCATIONS,
                json=body)
            return selecting.funnel_from_document(
                selection, self._transport.json(response))
        nodes = selecting.iter_nodes(
            self._transport, selecting.list_filters(selection, False))
        funnel, _survivors = funnel_of(selection, nodes)
        return selecting.explain_document(selection, funnel)

    # -- capacity (an extension of baremetal-alloc-server) ---------------

    def get_allocation_capacity(
        self, resource_class: str | None = None,
        constraints: Constraints | None = None,
    ) -> list[dict[str, Any]]:
        """Per resource class: total, allocated, reserved (with
        ``reserved_by_reason``) and free nodes; with ``constraints``,
        only the nodes satisfying them are counted.

        ``GET /v1/allocation_capacity`` exists only on
        baremetal-alloc-server: elsewhere (Ironic answers 404) this raises
        ExtensionNotSupported.
        """
        params = {"resource_class": resource_class} if resource_class else {}
        if constraints:
            params["constraints"] = json.dumps(constraints.to_wire())
        try:
            response = self._transport.request(
                "GET", CAPACITY_PATH, feature=versions.ALLOCATIONS,
                params=params,
            )
        except exceptions.NotFound:
            raise exceptions.ExtensionNotSupported(
                f"The server at {self._transport.root} has no allocation "
                f"capacity ({CAPACITY_PATH} is an extension of "
                f"baremetal-alloc-server; Ironic does not offer it)"
            ) from None
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
        deadline: budget.Deadline | None = None,
    ) -> Allocation:
        """Wait until an allocation is ``active`` and return it.

        ``allocation`` is an Allocation (e.g. from create) or a UUID/name.
        Polls with exponential backoff (0.05 s doubling to 2 s).
        ``timeout`` covers every request of the wait, including one that
        is slow to answer; ``deadline`` replaces it with a budget that
        started earlier (see :meth:`deadline`).

        Raises:
            AllocationFailed: it ended in ``error`` (carries last_error).
            WaitTimeout: still allocating when the time was up.
        """
        deadline = deadline or self.deadline(timeout)
        if isinstance(allocation, Allocation):
            initial: Allocation | None = allocation
            ident = allocation.ident
        else:
            initial = None
            ident = allocation
        return waiting.wait_for_allocation(
            lambda: self._get(ident, deadline),
            initial,
            on_progress=on_progress,
            clock=self._clock,
            sleep=self._sleep,
            deadline=deadline,
        )

    def wait_for_allocations(
        self,
        allocations: Iterable[Allocation | str],
        *,
        timeout: float | None = waiting.DEFAULT_TIMEOUT,
        raise_on_error: bool = True,
        on_progress: waiting.ProgressCallback | None = None,
        deadline: budget.Deadline | None = None,
    ) -> list[Allocation]:
        """Wait for many allocations with one list request per poll round.

        Identifiers given as strings are read once first (to learn their
        UUID and resource class).  Returns the final allocations in order.
        See :mod:`~baremetal_allocclient.v1.waiting` for the request count.
        ``timeout``/``deadline`` as in :meth:`wait_for_allocation`.

        Raises:
            AllocationFailed: if ``raise_on_error`` and any ended in
                ``error`` (after all settled; ``.results`` has them all).
            WaitTimeout: some were still allocating when the time was up.
        """
        deadline = deadline or self.deadline(timeout)
        known: list[Allocation] = []
        for item in allocations:
            if isinstance(item, Allocation) and item.uuid and item.state:
                known.append(item)
            else:
                ident = item.ident if isinstance(item, Allocation) else item
                known.append(self._get(ident, deadline))
        return waiting.wait_for_allocations(
            _ClientSource(self, deadline),
            known,
            raise_on_error=raise_on_error,
            on_progress=on_progress,
            clock=self._clock,
            sleep=self._sleep,
            deadline=deadline,
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
        constraints: Constraints | None = None,
        lease: datetime.timedelta | str | None = None,
        queue: bool = False,
    ) -> Allocation:
        """Create an allocation and wait until it is ``active``.

        ``timeout`` is the whole budget, from the create to the last poll
        (every request and retry included, the extension discovery
        too).  The create asks the server
        to answer once the allocation settled (``Prefer: wait``, within
        the budget), so on the reference server this is usually one
        request; polling takes over when the answer is still
        ``allocating``.  ``constraints`` and ``lease``: see
        :meth:`create_allocation` (the lease starts with the create).

        If anything fails (``error`` state, timeout, an error, Ctrl-C
        (KeyboardInterrupt) or SIGTERM), the allocation is deleted before
        the error propagates, so a failed call leaves nothing behind; a
        create the server refused (4xx) or never received made nothing
        and is not deleted.
        SIGTERM is deferred for this (in the main thread, when SIGTERM has
        its default action): after the delete the process ends as SIGTERM
        would have ended it.

        ``queue=True`` waits for capacity within the same ``timeout``: on
        a server with the queue extension (:meth:`supports_queue`) the
        allocation waits in its first-come-first-served line; elsewhere
        (Ironic) an allocation that failed for want of a free node is
        deleted and created again after a pause (backoff with jitter)
        until the budget ends, and a warning says that first come, first
        served is not guaranteed there.  Running out of time raises
        WaitTimeout, having deleted the allocation, so it leaves the line.
        """
        if lease is not None:
            extra = leases.with_lease(extra, self._lease(lease),
                                      leases.utcnow())
        request = reservation.Request(
            resource_class=resource_class, traits=tuple(traits),
            candidate_nodes=tuple(candidate_nodes), name=name, uuid=uuid,
            extra=dict(extra) if extra is not None else None, node=node,
            owner=owner,
            constraints=constraints,
        )
        deadline = self.deadline(timeout)
        with budget.bounded(deadline), interrupts.sigterm_raises():
            in_line = queue and node is None and self.supports_queue()
            run = reservation.Reservation(
                self, request, deadline, on_progress, queue=in_line,
            )
            try:
                return run.settle_one(retry_capacity=queue and not in_line)
            except BaseException as exc:
                report = run.release()
                for ident, reason in report.failed:
                    LOG.warning(
                        "Could not delete allocation %s after a failed "
                        "allocate(): %s", ident, reason,
                    )
                if isinstance(exc, exceptions.Terminated):
                    interrupts.finish_termination(exc)
                raise

    # -- groups (see v1/grouping.py) -----------------------------------

    def allocate_group(
        self,
        count: int,
        resource_class: str,
        *,
        name: str | None = None,
        traits: Iterable[str] = (),
        candidate_nodes: Iterable[str] = (),
        extra: Mapping[str, Any] | None = None,
        owner: str | None = None,
        timeout: float | None = waiting.DEFAULT_TIMEOUT,
        on_progress: waiting.ProgressCallback | None = None,
        constraints: Constraints | None = None,
        lease: datetime.timedelta | str | None = None,
    ) -> list[Allocation]:
        """Reserve ``count`` nodes, all or nothing: return ``count``
        ``active`` allocations on distinct nodes, or raise GroupFailed
        after deleting every allocation made for the group.

        The selection arguments are those of :meth:`allocate`.  ``name``
        names the group: the members are then ``NAME-0`` ..
        ``NAME-<count-1>`` and carry the group in ``extra``
        (``baremetal_alloc_group``, ``baremetal_alloc_group_size``), so
        :meth:`list_allocations` (``group=``) and :meth:`release_group`
        find them on any server.  ``timeout`` bounds the whole operation.
        ``lease`` (see :meth:`create_allocation`) gives every member the
        same lease, starting with the request; each member expires on
        its own (:meth:`expire`), and :meth:`renew_lease` renews one.

        On a server advertising the groups extension the nodes are
        reserved in one transaction; elsewhere (Ironic) the members are
        created one by one and rolled back on any failure.  Ctrl-C and
        SIGTERM roll back too (see :meth:`allocate`), then propagate.

        Raises:
            GroupFailed: nothing was kept; ``reason`` names the member
                that failed and its last_error (or the server's reason);
                ``left`` lists members that could not be deleted.
        """
        if lease is not None:
            extra = leases.with_lease(extra, self._lease(lease),
                                      leases.utcnow())
        request = reservation.Request(
            resource_class=resource_class, traits=tuple(traits),
            candidate_nodes=tuple(candidate_nodes), name=name,
            extra=dict(extra) if extra is not None else None, owner=owner,
            constraints=constraints,
        )
        deadline = self.deadline(timeout)
        with budget.bounded(deadline), \
                interrupts.sigterm_raises() as installed:
            run = grouping.GroupRun(self, request, count, deadline,
                                    on_progress)
            try:
                return run.make()
            except (KeyboardInterrupt, exceptions.Terminated) as exc:
                failure = run.fail(exc, interrupted=True)
                # What could not be deleted, for a caller that reports it.
                exc.group_left = failure.left  # type: ignore[union-attr]
                if installed and isinstance(exc, exceptions.Terminated):
                    interrupts.finish_termination(exc)
                raise
            except exceptions.ClientError as exc:
                raise run.fail(exc) from exc

    def _post_group(self, body: dict[str, Any], deadline: budget.Deadline
                    ) -> list[Allocation]:
        """``POST /v1/allocation_groups`` (the groups extension).  A
        retried request whose first attempt made the group returns it."""
        try:
            response = self._transport.request(
                "POST", groups.PATH, feature=grouping.FEATURE, json=body,
                headers=grouping.HEADERS, deadline=deadline,
                idempotent=True)
        except exceptions.Conflict as exc:
            if not exc.retried:
                raise
            made = []
            for uuid in body["uuids"]:
                try:
                    found = self._get(uuid, deadline)
                except exceptions.NotFound:
                    raise exc from None
                if groups.group_of(found.extra) != body.get("name") or (
                        found.resource_class != body["resource_class"]):
                    raise
                made.append(found)
            LOG.debug("Group create was retried; using the allocations "
                      "made by the first attempt")
            return made
        doc = self._transport.json(response)
        items = doc.get("allocations") if isinstance(doc, dict) else None
        if not isinstance(items, list) or len(items) != body["count"]:
            raise exceptions.InvalidResponse(
                "unexpected group document from the server")
        return [Allocation.from_wire(item) for item in items]

    def list_group(self, name: str) -> list[Allocation]:
        """The allocations of group ``name`` (marked in their ``extra``),
        in member order; empty when there are none."""
        found = list(self.list_allocations(group=name))
        return sorted(found, key=lambda a: (len(a.name or ""), a.name or ""))

    def renew_group(
        self, name: str, lease: datetime.timedelta | str
    ) -> list[Allocation]:
        """Renew the lease of every allocation of group ``name``: each one
        now ends ``lease`` from now (the same end for every member).
        Return the members renewed, in member order (empty: there was no
        such group).

        Raises ClientError naming the members renewed and those that could
        not be (one that expired and was released meanwhile is NotFound)
        after trying every member, so one failure does not cut the others'
        leases short.
        """
        extra = leases.lease_extra(self._lease(lease), leases.utcnow())
        renewed: list[Allocation] = []
        failures: list[str] = []
        for member in self.list_group(name):
            try:
                renewed.append(self.update_allocation(
                    str(member.uuid), set_extra=extra))
            except exceptions.ClientError as exc:
                failures.append(f"{member.name or member.ident}: {exc}")
        if failures:
            raise exceptions.ClientError(
                f"Could not renew {len(failures)} allocation(s) of group "
                f"{name} (renewed {len(renewed)}"
                + "".join(f", {a.name or a.ident}" for a in renewed) + "):\n  "
                + "\n  ".join(failures))
        return renewed

    def release_group(
        self, name: str, *, timeout: float | None = None
    ) -> list[str]:
        """Delete every allocation of group ``name``; return the UUIDs
        deleted (empty: there was no such group).

        Raises the first error after trying every member, so one member
        that cannot go (its node is deployed) does not keep the others.
        """
        deadline = self.deadline(timeout)
        deleted: list[str] = []
        failures: list[str] = []
        with budget.bounded(deadline):
            members = self.list_group(name)
        for member in members:
            try:
                if self.delete_allocation(str(member.uuid),
                                          ignore_missing=True,
                                          deadline=deadline):
                    deleted.append(str(member.uuid))
            except exceptions.ClientError as exc:
                failures.append(f"{member.ident}: {exc}")
        if failures:
            raise exceptions.ClientError(
                f"Could not delete {len(failures)} allocation(s) of group "
                f"{name} (deleted {len(deleted)}):\n  "
                + "\n  ".join(failures))
        return deleted


class _ClientSource:
    """Adapts a Client to :class:`waiting.AllocationSource`."""

    def __init__(self, client: Client, deadline: budget.Deadline) -> None:
        self._client = client
        self._deadline = deadline

    def get(self, uuid: str) -> Allocation:
        return self._client._get(uuid, self._deadline)

    def _list(self, **filters: Any) -> Iterator[Allocation]:
        return self._client._iterate(
            filters, versions.ALLOCATIONS, None, None, None, self._deadline
        )

    def allocating_uuids(self, resource_class: str | None) -> set[str]:
        return {
            str(item.uuid)
            for item in self._list(
                state=waiting.ALLOCATING,
                resource_class=resource_class,
                fields=["uuid"],
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
                for item in self._list(
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
                found[uuid] = self.get(uuid)
        return [found[str(item.uuid)] for item in allocations]
