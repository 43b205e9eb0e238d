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
import time
import types
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from baremetal_allocclient import exceptions
from baremetal_allocclient.v1 import (
    allocations,
    clouds,
    listing,
    nodes,
    waiting,
)
from baremetal_allocclient.v1.allocations import _Unset
from baremetal_allocclient.v1.capacity import CAPACITY_PATH
from baremetal_allocclient.v1.resources import Allocation, Node
from baremetal_allocclient.v1.session import ApiSession, VersionArg

if TYPE_CHECKING:
    import random

    from keystoneauth1 import adapter as ks_adapter
    from keystoneauth1 import session as ks_session
    from typing_extensions import Unpack

    from baremetal_allocclient.constraints import Constraints
    from baremetal_allocclient.spread import Spread
    from baremetal_allocclient.v1 import budget, leasing, retries
    from baremetal_allocclient.v1.request import (
        AllocationRequest,
        RequestFields,
    )
    from baremetal_allocclient.v1.watching import AllocationChange

__all__ = ["CAPACITY_PATH", "CLIENT_NAME", "SERVICE_TYPE", "UNSET", "Client",
           "VersionArg"]

#: Default of ``update_allocation(name=...)``: leave the name unchanged.
UNSET: Final = allocations.UNSET

SERVICE_TYPE: Final = "baremetal"
CLIENT_NAME: Final = "baremetal-allocclient"


class Client(ApiSession):
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
        super().__init__(adapter, api_version=api_version,
                         retry_policy=retry_policy, _clock=_clock,
                         _sleep=_sleep, _rng=_rng)

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
        # Imported here: a client built on an adapter never needs it.
        from keystoneauth1 import adapter as ks_adapter

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
        from keystoneauth1 import session as ks_session

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
        from keystoneauth1 import exceptions as ks_exc

        region = clouds.resolve(cloud, **overrides)
        try:
            session = region.get_session()
        except ks_exc.ClientException as exc:
            raise exceptions.ConfigurationError(
                f"Invalid cloud configuration: {exc}"
            ) from exc
        return cls.from_resolved_cloud(
            clouds.ResolvedCloud.from_region(region), session=session,
            api_version=api_version, retry_policy=retry_policy)

    @classmethod
    def from_resolved_cloud(
        cls,
        resolved: clouds.ResolvedCloud,
        *,
        session: ks_session.Session | None = None,
        api_version: VersionArg = None,
        retry_policy: retries.RetryPolicy | None = None,
    ) -> Client:
        """Build a client from a cloud :func:`.clouds.resolve` resolved,
        on ``session`` or on one of its own (:meth:`.ResolvedCloud.session`).
        Its ``baremetal_api_version`` pins the version unless
        ``api_version`` is given."""
        return cls.from_session(
            session if session is not None else resolved.session(),
            endpoint_override=resolved.endpoint,
            interface=resolved.interface,
            region_name=resolved.region_name,
            api_version=(resolved.api_version if api_version is None
                         else api_version),
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

    # The session's time hooks are part of the client's API.
    sleep = ApiSession.sleep
    deadline = ApiSession.deadline

    # -- allocations (v1/creating.py, allocations.py, listing.py) -------

    def create_allocation(
        self,
        request: AllocationRequest | str | None = None,
        *,
        prefer_wait: float | None = None,
        deadline: budget.Deadline | None = None,
        **fields: Unpack[RequestFields],
    ) -> Allocation:
        """Request a node: ``POST /v1/allocations``.

        ``request`` is an :class:`~baremetal_allocclient.v1.AllocationRequest`
        (what to allocate: resource class, traits, constraints, lease,
        ...); or give its fields as keyword arguments, the resource class
        first: ``create_allocation("baremetal", traits=["CUSTOM_GPU"])``
        (:class:`~baremetal_allocclient.v1.request.RequestFields`).

        Without a ``uuid`` the client chooses one (a random UUID), so the
        request can be repeated safely: when an answer is lost (connection
        reset, timeout, 503) the create is sent again, and if the server
        answers 409 because the first attempt did create that UUID, the
        existing allocation is fetched and returned.  One call makes at
        most one allocation.  A lease starts with the call.

        The server answers at once with the allocation in ``allocating``;
        use :meth:`wait_for_allocation` or :meth:`allocate`.  With
        ``node`` (a backfill, API 1.58) ``resource_class`` may be
        omitted; ``owner`` needs API 1.60.  With ``queue`` the allocation
        stays ``allocating`` in the server's line until a matching node
        is free, at most what is left of ``deadline`` (or the server's
        maximum without one); then it ends in ``error``.  That needs the
        reference server's queue extension (:meth:`supports_queue`):
        against Ironic it raises InvalidArgument; :meth:`allocate`
        retries instead.

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
        """
        from baremetal_allocclient.v1 import creating
        from baremetal_allocclient.v1.request import requested

        return creating.create(self, requested(request, fields),
                               prefer_wait=prefer_wait, deadline=deadline)

    def get_allocation(
        self, ident: str, *, fields: Sequence[str] | None = None
    ) -> Allocation:
        """Fetch one allocation by UUID or name (``fields=`` optional)."""
        return allocations.get(self, ident, None, fields)

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
        return listing.list_allocations(
            self, state=state, resource_class=resource_class, node=node,
            owner=owner, fields=fields, limit=limit, marker=marker,
            sort_key=sort_key, sort_dir=sort_dir, page_size=page_size,
            expired=expired, now=now, group=group,
        )

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
        return allocations.update(self, ident, name=name,
                                  set_extra=set_extra,
                                  unset_extra=unset_extra)

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
        return allocations.delete(self, ident, ignore_missing=ignore_missing,
                                  deadline=deadline)

    # -- leases (v1/leasing.py) -----------------------------------------

    def renew_lease(
        self, allocation: Allocation | str,
        lease: datetime.timedelta | str,
    ) -> Allocation:
        """Give an allocation a lease ending ``lease`` from now (JSON patch
        of the lease keys of ``extra``; other keys are left as they are).

        Renew before the lease ends: a lease that already ended may be
        expired by a concurrent :meth:`expire` (NotFound then).
        """
        from baremetal_allocclient.v1 import leasing

        return leasing.renew_lease(self, allocation, lease)

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
        from baremetal_allocclient.v1 import leasing

        return leasing.expire(self, dry_run=dry_run, undeploy=undeploy,
                              resource_class=resource_class, owner=owner)

    # -- nodes and a node's allocation (v1/nodes.py, allocations.py) ---

    def undeploy_node(self, node: str) -> None:
        """Ask for a node's tear-down (provision target ``deleted``);
        the server deletes its allocation when the tear-down ends."""
        nodes.undeploy(self, node)

    def get_node_allocation(
        self, node: str, *, fields: Sequence[str] | None = None
    ) -> Allocation:
        """Fetch the allocation of a node (UUID or name)."""
        return allocations.get_of_node(self, node, fields=fields)

    def delete_node_allocation(
        self, node: str, *, ignore_missing: bool = False
    ) -> bool:
        """Delete the allocation of a node (UUID or name); False if there
        was none (with ``ignore_missing``)."""
        return allocations.delete_of_node(self, node,
                                          ignore_missing=ignore_missing)

    def get_node(
        self, ident: str, *, fields: Sequence[str] | None = None
    ) -> Node:
        """Fetch the read-only view of a node by UUID or name."""
        return nodes.get(self, ident, fields=fields)

    # -- extensions, explain, capacity -----------------------------------

    def supports_constraints(self) -> bool:
        """Whether the server evaluates constraints itself (the reference
        server's extension, advertised in ``GET /v1``); asked once."""
        from baremetal_allocclient.v1 import extensions

        return extensions.supports_constraints(self)

    def supports_groups(self) -> bool:
        """Whether the server reserves a whole group in one transaction
        (the reference server's groups extension, advertised in ``GET
        /v1``); asked once."""
        from baremetal_allocclient.v1 import extensions

        return extensions.supports_groups(self)

    def supports_queue(self) -> bool:
        """Whether the server keeps allocations waiting in line for
        capacity (the reference server's queue extension, advertised in
        ``GET /v1``); asked once."""
        from baremetal_allocclient.v1 import extensions

        return extensions.supports_queue(self)

    def explain(
        self,
        request: AllocationRequest | str | None = None,
        **fields: Unpack[RequestFields],
    ) -> dict[str, Any]:
        """The selection funnel of an allocation request, reserving
        nothing: ``{"resource_class", "funnel": [{"step", "count"}...],
        "candidates", "first_empty"}``.  One request on the reference
        server; computed from the node list on Ironic.

        ``request`` as in :meth:`create_allocation`; its selection
        (resource class, traits, candidate nodes, owner, constraints)
        is explained, its other fields are not used.
        """
        from baremetal_allocclient.v1 import explaining
        from baremetal_allocclient.v1.request import requested

        return explaining.explain(self, requested(request, fields))

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
        from baremetal_allocclient.v1 import capacity

        return capacity.get_capacity(self, resource_class, constraints)

    # -- watching (v1/watching.py) ---------------------------------------

    def watch_allocations(
        self,
        *,
        since: int | None = None,
        timeout: float | None = None,
        deadline: budget.Deadline | None = None,
        resource_class: str | None = None,
        state: str | None = None,
        owner: str | None = None,
        node: str | None = None,
        name: str | None = None,
        group: str | None = None,
        uuid: str | None = None,
    ) -> Iterator[AllocationChange]:
        """Yield each committed change of the allocations this client may
        see, as :class:`~baremetal_allocclient.v1.watching.
        AllocationChange` (the reference server's watch extension).

        ``since`` is a cursor (a change's, or :meth:`watch_cursor` read
        before a list: list, then watch); without it the stream starts
        now.  The filters are the allocation list's (plus
        ``name``, ``group`` and ``uuid``).  A dropped connection is
        opened again from the last cursor read: no change is missed or
        repeated.  Ends when ``timeout`` (or ``deadline``) runs out;
        ``None`` watches until the caller stops iterating.

        Raises:
            ExtensionNotSupported: the server does not offer the stream
                (real Ironic): poll instead.
            Gone: ``since`` is older than the server keeps changes; list
                again and watch from the list's cursor.
        """
        from baremetal_allocclient.v1 import watching

        return watching.watch_allocations(
            self, since=since, timeout=timeout, deadline=deadline,
            resource_class=resource_class, state=state, owner=owner,
            node=node, name=name, group=group, uuid=uuid)

    def watch_cursor(self) -> int:
        """The cursor to pass as ``since`` to :meth:`watch_allocations`
        after a list made next (take it before the list)."""
        from baremetal_allocclient.v1 import watching

        return watching.cursor(self)

    def supports_watch(self) -> bool:
        """Whether the server offers the change stream (reads ``GET /v1``
        once)."""
        from baremetal_allocclient.v1 import watching

        return watching.supported(self)

    # -- waiting (v1/polling.py, reservation.py) ------------------------

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
        from baremetal_allocclient.v1 import polling

        return polling.wait_for_allocation(
            self, allocation, timeout=timeout, on_progress=on_progress,
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
        from baremetal_allocclient.v1 import polling

        return polling.wait_for_allocations(
            self, allocations, timeout=timeout,
            raise_on_error=raise_on_error, on_progress=on_progress,
            deadline=deadline,
        )

    def allocate(
        self,
        request: AllocationRequest | str | None = None,
        *,
        timeout: float | None = waiting.DEFAULT_TIMEOUT,
        on_progress: waiting.ProgressCallback | None = None,
        **fields: Unpack[RequestFields],
    ) -> Allocation:
        """Create an allocation and wait until it is ``active``.

        ``request`` as in :meth:`create_allocation`:
        ``allocate("baremetal", traits=["CUSTOM_GPU"], timeout=60)`` or
        ``allocate(AllocationRequest("baremetal"), timeout=60)``.

        ``timeout`` is the whole budget, from the create to the last poll
        (every request and retry included, the extension discovery
        too).  The create asks the server
        to answer once the allocation settled (``Prefer: wait``, within
        the budget), so on the reference server this is usually one
        request; polling takes over when the answer is still
        ``allocating``.  A lease starts with the call.

        If anything fails (``error`` state, timeout, an error, Ctrl-C
        (KeyboardInterrupt) or SIGTERM), the allocation is deleted before
        the error propagates, so a failed call leaves nothing behind; a
        create the server refused (4xx) or never received made nothing
        and is not deleted.
        SIGTERM is deferred for this (in the main thread, when SIGTERM has
        its default action): after the delete the process ends as SIGTERM
        would have ended it.

        A request with ``queue`` waits for capacity within the same
        ``timeout``: on a server with the queue extension
        (:meth:`supports_queue`) the allocation waits in its
        first-come-first-served line; elsewhere (Ironic) an allocation
        that failed for want of a free node is deleted and created again
        after a pause (backoff with jitter) until the budget ends, and a
        warning says that first come, first served is not guaranteed
        there.  Running out of time raises WaitTimeout, having deleted
        the allocation, so it leaves the line.
        """
        from baremetal_allocclient.v1 import reservation
        from baremetal_allocclient.v1.request import requested

        return reservation.allocate(self, requested(request, fields),
                                    timeout=timeout, on_progress=on_progress)

    # -- groups (v1/grouping.py) ----------------------------------------

    def allocate_group(
        self,
        count: int,
        request: AllocationRequest | str | None = None,
        *,
        timeout: float | None = waiting.DEFAULT_TIMEOUT,
        on_progress: waiting.ProgressCallback | None = None,
        spread: Spread | None = None, **fields: Unpack[RequestFields],
    ) -> list[Allocation]:
        """Reserve ``count`` nodes, all or nothing: return ``count``
        ``active`` allocations on distinct nodes, or raise GroupFailed
        after deleting every allocation made for the group.

        ``request`` as in :meth:`allocate` (a resource class is required;
        ``uuid``, ``node`` and ``queue`` do not apply: InvalidArgument).
        Its ``name`` names the group: the members are then ``NAME-0`` ..
        ``NAME-<count-1>`` and record the group (the reference server's
        ``group`` field; on Ironic the string keys
        ``baremetal_alloc:group`` and ``baremetal_alloc:group_size`` of
        ``extra``; :attr:`Allocation.marks` reads either), so
        :meth:`list_allocations` (``group=``) and :meth:`release_group`
        find them on any server.  ``timeout`` bounds the whole operation.
        A lease gives every member the same lease, starting with the
        call; each member expires on its own (:meth:`expire`), and
        :meth:`renew_lease` renews one.

        On a server advertising the groups extension the nodes are
        reserved in one transaction; elsewhere (Ironic) the members are
        created one by one and rolled back on any failure.  Ctrl-C and
        SIGTERM roll back too (see :meth:`allocate`), then propagate.
        ``spread``: see :mod:`baremetal_allocclient.v1.spreading`.

        Raises:
            GroupFailed: nothing was kept; ``reason`` names the member
                that failed and its last_error (or the server's reason);
                ``left`` lists members that could not be deleted.
        """
        from baremetal_allocclient.v1 import grouping
        from baremetal_allocclient.v1.request import requested

        return grouping.allocate_group(
            self, count, requested(request, fields), timeout=timeout,
            on_progress=on_progress, spread=spread,
        )

    def list_group(self, name: str) -> list[Allocation]:
        """The allocations of group ``name`` (marked in their ``extra``),
        in member order; empty when there are none."""
        from baremetal_allocclient.v1 import grouping

        return grouping.list_group(self, name)

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
        from baremetal_allocclient.v1 import grouping

        return grouping.renew_group(self, name, lease)

    def release_group(
        self, name: str, *, timeout: float | None = None
    ) -> list[str]:
        """Delete every allocation of group ``name``; return the UUIDs
        deleted (empty: there was no such group).

        Raises the first error after trying every member, so one member
        that cannot go (its node is deployed) does not keep the others.
        """
        from baremetal_allocclient.v1 import grouping

        return grouping.release_group(self, name, timeout=timeout)
