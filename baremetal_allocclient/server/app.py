"""The WSGI application: routing, version negotiation, error rendering."""

from __future__ import annotations

import json
import logging
import random
import time
import uuid as uuidlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sqlalchemy.exc import DBAPIError, IntegrityError

from baremetal_allocclient.constraints import EXPLAIN_PATH
from baremetal_allocclient.extension_names import WATCH_PATH
from baremetal_allocclient.groups import PATH as GROUPS_PATH
from baremetal_allocclient.server import openapi
from baremetal_allocclient.server.allocation.handlers import (
    allocations,
    capacity,
    explain,
    extensions,
    groups,
    watch,
)
from baremetal_allocclient.server.api import (
    limits,
    storable,
    versions,
)
from baremetal_allocclient.server.api.auth import named_node, principal_of
from baremetal_allocclient.server.api.context import (
    Context,
    json_response,
    node_scope,
)
from baremetal_allocclient.server.api.errors import (
    ApiError,
    RouteError,
    as_api_error,
)
from baremetal_allocclient.server.api.http import Request, Response
from baremetal_allocclient.server.api.routing import Route, Router
from baremetal_allocclient.server.db.engine import (
    CommitOutcomeUnknown,
    is_bad_data,
    is_transient,
    is_unavailable,
    short_reason,
)
from baremetal_allocclient.server.domain.errors import DomainError, Forbidden
from baremetal_allocclient.server.domain.recording import (
    REQUEST,
    RequestInfo,
)
from baremetal_allocclient.server.ironic.handlers import (
    boot_mode,
    chassis,
    nodes,
    ports,
    provisioning,
    traits,
    vifs,
    vmedia,
)
from baremetal_allocclient.server.ironic.service import nodes as node_service
from baremetal_allocclient.server.metrics import endpoints
from baremetal_allocclient.server.services import Services

LOG = logging.getLogger(__name__)

Handler = Callable[..., Response]
#: Requests that change nothing, run again on a fresh connection when the
#: pooled one had died.
_READS = frozenset({"GET", "HEAD"})
TRANSIENT_RETRIES = 5
DB_RETRY_AFTER = 5  # seconds, advertised with 503 while the database is down
_JITTER = random.SystemRandom()
#: Where a request's route template and status are kept in its environ,
#: for the metrics (a request matching no route: UNMATCHED).
ROUTE_KEY = "baremetal_alloc.route"
STATUS_KEY = "baremetal_alloc.status"
UNMATCHED = "unmatched"
#: The whole body of every 500: details go to the server log only.
INTERNAL_ERROR = ("The server failed to handle the request; the details "
                  "are in its log.")


_ROUTES: list[tuple[str, str, Handler]] = [
    ("/v1/allocations", "GET", allocations.list_allocations),
    ("/v1/allocations", "POST", allocations.create_allocation),
    ("/v1/allocations/<ident>", "GET", allocations.get_allocation),
    ("/v1/allocations/<ident>", "PATCH", allocations.update_allocation),
    ("/v1/allocations/<ident>", "DELETE", allocations.delete_allocation),
    ("/v1/chassis", "GET", chassis.list_chassis),
    ("/v1/chassis", "POST", chassis.create_chassis),
    ("/v1/chassis/detail", "GET", chassis.list_chassis_detail),
    ("/v1/chassis/<ident>", "GET", chassis.get_chassis),
    ("/v1/chassis/<ident>", "PATCH", chassis.update_chassis),
    ("/v1/chassis/<ident>", "DELETE", chassis.delete_chassis),
    ("/v1/chassis/<ident>/nodes", "GET", chassis.list_chassis_nodes),
    ("/v1/chassis/<ident>/nodes/detail", "GET",
     chassis.list_chassis_nodes_detail),
    ("/v1/nodes", "GET", nodes.list_nodes),
    ("/v1/nodes", "POST", nodes.create_node),
    ("/v1/nodes/detail", "GET",
     lambda ctx: nodes.list_nodes(ctx, detail=True)),
    ("/v1/nodes/<ident>", "GET", nodes.get_node),
    ("/v1/nodes/<ident>", "PATCH", nodes.update_node),
    ("/v1/nodes/<ident>", "DELETE", nodes.delete_node),
    ("/v1/nodes/<ident>/allocation", "GET",
     allocations.get_node_allocation),
    ("/v1/nodes/<ident>/allocation", "DELETE",
     allocations.delete_node_allocation),
    ("/v1/nodes/<ident>/states", "GET", provisioning.get_states),
    ("/v1/nodes/<ident>/states/provision", "PUT",
     provisioning.set_provision_state),
    ("/v1/nodes/<ident>/states/power", "PUT", provisioning.set_power_state),
    ("/v1/nodes/<ident>/states/boot_mode", "PUT", boot_mode.set_boot_mode),
    ("/v1/nodes/<ident>/states/secure_boot", "PUT",
     boot_mode.set_secure_boot),
    ("/v1/nodes/<ident>/maintenance", "PUT", provisioning.set_maintenance),
    ("/v1/nodes/<ident>/maintenance", "DELETE",
     provisioning.unset_maintenance),
    ("/v1/nodes/<ident>/validate", "GET", provisioning.validate_node),
    ("/v1/nodes/<ident>/firmware", "GET", provisioning.list_firmware),
    ("/v1/nodes/<ident>/vmedia", "POST", vmedia.attach_vmedia),
    ("/v1/nodes/<ident>/vmedia", "DELETE", vmedia.detach_vmedia),
    ("/v1/nodes/<ident>/traits", "GET", traits.get_traits),
    ("/v1/nodes/<ident>/traits", "PUT", traits.set_traits),
    ("/v1/nodes/<ident>/traits", "DELETE", traits.remove_traits),
    ("/v1/nodes/<ident>/traits/<trait>", "PUT", traits.add_trait),
    ("/v1/nodes/<ident>/traits/<trait>", "DELETE", traits.remove_trait),
    ("/v1/nodes/<ident>/ports", "GET", ports.list_node_ports),
    ("/v1/nodes/<ident>/ports/detail", "GET", ports.list_node_ports_detail),
    ("/v1/nodes/<ident>/vifs", "GET", vifs.list_vifs),
    ("/v1/nodes/<ident>/vifs", "POST", vifs.attach_vif),
    ("/v1/nodes/<ident>/vifs/<vif>", "DELETE", vifs.detach_vif),
    ("/v1/shards", "GET", nodes.list_shards),
    ("/v1/ports", "GET", ports.list_ports),
    ("/v1/ports", "POST", ports.create_port),
    ("/v1/ports/detail", "GET",
     lambda ctx: ports.list_ports(ctx, detail=True)),
    ("/v1/ports/<ident>", "GET", ports.get_port),
    ("/v1/ports/<ident>", "PATCH", ports.update_port),
    ("/v1/ports/<ident>", "DELETE", ports.delete_port),
    ("/v1/openapi.json", "GET", openapi.serve),
    (capacity.PATH, "GET", capacity.get_capacity),  # our extension
    (EXPLAIN_PATH, "POST", explain.explain_allocation),  # our extension
    (GROUPS_PATH, "POST", groups.create_group),  # our extension
    (WATCH_PATH, "GET", watch.watch_allocations),  # our extension
    (endpoints.PATH, "GET", endpoints.serve_metrics),  # admins only
]


#: What the server answers itself when it fronts a real Ironic (the
#: broker); every other path is passed through to Ironic.
_BROKER_OWNS = frozenset({
    "/v1/nodes/<ident>/allocation", "/v1/openapi.json", capacity.PATH,
    EXPLAIN_PATH, GROUPS_PATH, WATCH_PATH, endpoints.PATH,
})
#: The route of a request passed through, for the metrics.
PASSTHROUGH = "passthrough"


def owned_by_broker(path: str) -> bool:
    """Whether the broker serves a route template itself."""
    return path.startswith("/v1/allocations") or path in _BROKER_OWNS


_VERSION_RANGE = (
    (versions.MIN_HEADER, str(versions.MIN_VERSION)),
    (versions.MAX_HEADER, str(versions.MAX_VERSION)),
)


def error_body(status: int, message: str) -> dict[str, str]:
    """Ironic's error document: a JSON string inside ``error_message``."""
    fault = {
        "faultcode": "Client" if status < 500 else "Server",
        "faultstring": message,
        "debuginfo": None,
    }
    return {"error_message": json.dumps(fault)}


def version_error_body(status: int, title: str, detail: str) -> dict[str, str]:
    """The other shape Ironic uses for version-negotiation failures."""
    inner = {"code": status, "title": title, "description": detail}
    return {"error_message": json.dumps(inner)}


class Application:
    """The Ironic-compatible WSGI application."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self._passthrough = services.passthrough
        served = [entry for entry in _ROUTES
                  if self._passthrough is None or owned_by_broker(entry[0])]
        routes = [Route(path, method, f"r{i}")
                  for i, (path, method, _handler) in enumerate(served)]
        self._router = Router(routes)
        self._handlers: dict[str, Handler] = {
            route.endpoint: handler
            for route, (_path, _method, handler) in zip(routes, served,
                                                        strict=True)}
        metrics = services.metrics
        self._instruments = None if metrics is None else metrics.instruments
        self._recorder = services.recorder

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        instruments = self._instruments
        if instruments is None:
            return self._answer(environ, start_response)
        began = time.perf_counter()
        with instruments.in_flight():
            answer = self._answer(environ, start_response)
        instruments.request(
            environ.get(ROUTE_KEY, UNMATCHED),
            str(environ.get("REQUEST_METHOD", "GET")),
            int(environ.get(STATUS_KEY, 500)),
            time.perf_counter() - began)
        return answer

    def _answer(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        request = Request(environ)
        request_id = f"req-{uuidlib.uuid4()}"
        who = principal_of(environ)
        asking = REQUEST.set(RequestInfo(request_id, who.user, who.project))
        try:
            response, version = self._dispatch(request)
        finally:
            REQUEST.reset(asking)
        if LOG.isEnabledFor(logging.INFO):  # the line costs its arguments
            LOG.info(
                "%s %s %s -> %s user=%s", request.method,
                request.full_path.rstrip("?"),
                request.headers.get(versions.HEADER, "-"),
                response.status_code, environ.get("REMOTE_USER", "-"),
            )
        if environ.get(ROUTE_KEY) == PASSTHROUGH:  # Ironic's headers
            environ[STATUS_KEY] = response.status_code
            return response(environ, start_response)
        # Every answer's version and request id headers, after its own.
        headers = response.headers
        headers.update(_VERSION_RANGE)
        if version is not None:
            headers[versions.HEADER] = str(version)
        headers["X-OpenStack-Request-Id"] = request_id
        headers["OpenStack-Request-Id"] = request_id
        environ[STATUS_KEY] = response.status_code
        return response(environ, start_response)

    def _dispatch(
        self, request: Request
    ) -> tuple[Response, versions.Version | None]:
        """The response and the version it was served at (``None`` when
        the requested version was refused: Ironic then sends no version
        header, only the supported range)."""
        base = request.base_url
        path = request.path.rstrip("/") or "/"
        try:
            version = versions.parse(request.headers.get(versions.HEADER))
        except versions.VersionError as exc:
            # Ironic answers the root in its usual error shape and
            # everything below /v1 in the {code, title, description} one.
            if path == "/":
                body = error_body(406, str(exc))
            else:
                body = version_error_body(406, "Not Acceptable", str(exc))
            return json_response(body, 406), None
        if path in ("/", "/v1"):
            request.environ[ROUTE_KEY] = path
        if path == "/":
            return json_response(versions.root_document(base)), version
        if path == "/v1":
            document = versions.v1_document(base, version.minor)
            rounds = self.services.queue
            document["extensions"] = extensions.advertisement(
                base, self.services,
                groups=self.services.workers.backend.name
                in groups.GROUP_BACKENDS,
                queue_max_wait=rounds.max_wait if rounds is not None
                else None)
            if self._passthrough is not None:
                document["extensions"]["broker"] = \
                    self._passthrough.advertised()
            return json_response(document), version
        ctx = Context(request, version, base, self.services)
        try:
            storable.check_url(path, request.args.pairs)
            try:
                route, args = self._router.match(request.path,
                                                 request.method)
            except RouteError as exc:
                if self._passthrough is None or exc.status != 404:
                    raise
                request.environ[ROUTE_KEY] = PASSTHROUGH
                # A refusal of this server's is given before Ironic is
                # asked (with HTTP basic, Ironic would let anyone), the
                # node found in the mirror as the caller may see it.
                _refuse_once_found(ctx)
                return self._passthrough(request, version), version
            request.environ[ROUTE_KEY] = route.template
            _refuse_once_found(ctx)
            limits.check_query(route.template, request.method,
                               request.args.pairs)
            handler = self._handlers[route.endpoint]
            return self._call_with_retries(handler, ctx, args), version
        except RouteError as exc:
            return json_response(version_error_body(
                exc.status, exc.message, ""), exc.status), version
        except ApiError as exc:
            return self._api_error(exc), version
        except DomainError as exc:
            return self._api_error(as_api_error(exc)), version
        except DBAPIError as exc:
            return self._database_error(request, exc), version
        except CommitOutcomeUnknown as exc:
            self._recorder.database_error("commit_unknown")
            return self._commit_unknown(request, exc), version
        except Exception as exc:
            if is_unavailable(exc):  # e.g. no pooled connection in time
                self._recorder.database_error("unavailable")
                return self._db_unavailable(request, exc), version
            return self._internal_error(request, exc), version

    @staticmethod
    def _api_error(exc: ApiError) -> Response:
        """Ironic's error body with the error's status."""
        return json_response(error_body(exc.status, exc.message),
                             exc.status)

    def _call_with_retries(
        self, handler: Handler, ctx: Context, args: Mapping[str, Any]
    ) -> Response:
        """Run a handler, again when the database reports a deadlock,
        and a read once more when its pooled connection had died (one
        used a moment ago is not pinged, see ``db.engine``; the pool
        then replaces its connections).

        Every handler does its database work in one transaction, so a
        transient failure left nothing behind and the request can rerun.
        """
        for attempt in range(TRANSIENT_RETRIES):
            try:
                return handler(ctx, **args)
            except DBAPIError as exc:
                if attempt == 0 and exc.connection_invalidated and (
                        ctx.request.method in _READS):
                    continue
                if not is_transient(exc) or attempt == TRANSIENT_RETRIES - 1:
                    raise
                self._recorder.database_error("retried")
                time.sleep(_JITTER.uniform(0.01, 0.05) * (attempt + 1))
        raise AssertionError("unreachable")

    @staticmethod
    def _db_unavailable(request: Request, exc: Exception) -> Response:
        """503 while the database is down or unreachable: the request
        changed nothing and may be retried; the pool reconnects by
        itself once the database is back."""
        LOG.warning("Database unavailable during %s %s: %s", request.method,
                    request.path, short_reason(exc))
        response = json_response(
            error_body(503, "The database is temporarily unavailable; "
                            "retry later."), 503
        )
        response.headers["Retry-After"] = str(DB_RETRY_AFTER)
        return response

    @staticmethod
    def _commit_unknown(request: Request, exc: Exception) -> Response:
        """503 when the database went away during the commit and did not
        come back in time to tell whether it happened: never "changed
        nothing", since it may have."""
        LOG.warning("Database unavailable while committing %s %s: %s",
                    request.method, request.path, exc)
        response = json_response(error_body(
            503, "The database became unavailable while this change was "
                 "being committed; it may or may not have been applied. "
                 "Check before retrying."), 503)
        response.headers["Retry-After"] = str(DB_RETRY_AFTER)
        return response

    def _database_error(
        self, request: Request, exc: DBAPIError
    ) -> Response:
        """The answer to an error the database raised: narrow classes,
        everything unknown is a 500 that names nothing."""
        if is_unavailable(exc):
            self._recorder.database_error("unavailable")
            return self._db_unavailable(request, exc)
        if is_bad_data(exc):
            LOG.warning("Database refused a value in %s %s: %s",
                        request.method, request.path, short_reason(exc))
            return json_response(error_body(
                400, "The request contains a value the database cannot "
                     "store."), 400)
        if isinstance(exc, IntegrityError):
            # A uniqueness race lost against a concurrent request.
            return json_response(
                error_body(409, "The request conflicts with a concurrent "
                                "change (a name or UUID is already in "
                                "use); retry."), 409
            )
        if is_transient(exc):
            self._recorder.database_error("conflict")
            return json_response(
                error_body(409, "The request conflicted with a concurrent "
                                "change; retry."), 409
            )
        return self._internal_error(request, exc)

    @staticmethod
    def _internal_error(request: Request, exc: Exception) -> Response:
        """500 without the exception's text (it may quote SQL or the
        request's values); the log has it."""
        LOG.error("Unexpected error in %s %s", request.method, request.path,
                  exc_info=exc)
        return json_response(error_body(500, INTERNAL_ERROR), 500)


def _refuse_once_found(ctx: Context) -> None:
    """A role refusal the authentication left for a request naming a
    node: 404 when the caller cannot see that node (in this server's
    nodes, the broker's mirror of Ironic's included), else 403."""
    refused = principal_of(ctx.request.environ).refused
    if refused is None:
        return
    ident = named_node(ctx.request.path)
    if ident is not None:
        node_service.find(ctx.services.db, node_scope(ctx), ident)
    raise Forbidden(refused)
