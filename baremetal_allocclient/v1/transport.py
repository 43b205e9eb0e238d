"""The one request helper: microversions, retries and error mapping.

Negotiation strategy (chosen to make a simple CLI command cost exactly one
HTTP request):

* Optimistic by default.  Until the server's range is known, a request is
  sent at the client's maximum (:data:`versions.CLIENT_MAX_VERSION`).  Every
  Ironic ``/v1`` response announces the server's range in its
  ``X-OpenStack-Ironic-API-Minimum/Maximum-Version`` headers, which the
  transport records, so no discovery round trip is needed.
* A server older than the client answers that first request with 406 and
  its range; the transport then retries once at ``min(client max, server
  max)`` if the call's feature exists there, or raises
  :class:`~baremetal_allocclient.exceptions.VersionNotSupported` naming the
  feature and the version it needs.  If a 406 carries no range, the root
  document (``GET /``) is read once to learn it.
* Once the range is known (from any response or from :meth:`discover`), each
  call's feature is checked before anything is sent.
* A pinned version is always sent as is; a 406 for it is reported as
  VersionNotSupported, never silently downgraded.

The range is learned once per transport (that is, per Client) and shared by
all its calls.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from baremetal_allocclient import exceptions
from baremetal_allocclient.v1 import budget, retries, versions

if TYPE_CHECKING:
    import requests
    from keystoneauth1 import adapter as ks_adapter

LOG = logging.getLogger(__name__)

REQUEST_ID_HEADER = "x-openstack-request-id"

VersionRange = tuple[versions.Version, versions.Version]


def root_endpoint(endpoint: str) -> str:
    """Strip a trailing ``/`` and ``/v1`` from a bare metal endpoint.

    Catalogs and users give either ``http://host:6385`` or
    ``http://host:6385/v1``; requests are built from the root.
    """
    root = endpoint.rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    return root.rstrip("/")


def is_transient_connection_error(error: BaseException) -> bool:
    """A refused connection never reached the server: safe to repeat."""
    text = str(error).lower()
    return "refused" in text or "errno 111" in text


def _reason(error: BaseException) -> str:
    """Shorten keystoneauth/urllib3's nested connection error text."""
    text = str(error)
    for marker in ("Connection refused", "Name or service not known",
                   "timed out", "No route to host",
                   "Temporary failure in name resolution",
                   "certificate verify failed"):
        if marker.lower() in text.lower():
            return marker
    return text


_KS_SUFFIX = re.compile(r"( \(HTTP \d+\))?( \(Request-ID: [^)]*\))?$")


def _from_keystoneauth(
    error: Exception, context: str
) -> exceptions.ClientError:
    """Map a keystoneauth error raised outside our own request.

    Token requests and catalog lookups happen inside keystoneauth; their
    HTTP errors (e.g. a wrong password, 401) keep their status, anything
    else (missing auth options, no endpoint in the catalog) is a
    configuration problem.
    """
    from keystoneauth1 import exceptions as ks_exc

    if isinstance(error, ks_exc.HttpError):
        status = int(error.http_status or 0)
        cls = exceptions.error_class(status)
        # keystoneauth's message may already end with the status and the
        # request ID, which HttpError adds.
        message = _KS_SUFFIX.sub("", str(error.message or error))
        return cls(
            f"{context}: {message}",
            status_code=status,
            request_id=error.request_id,
            method=error.method,
            url=error.url,
        )
    return exceptions.ConfigurationError(f"{context}: {error}")


class Transport:
    """Sends requests on a keystoneauth1 Adapter.

    Its only state is the endpoint root and the server's version range,
    each learned once; threads sharing a transport at worst learn them
    twice.

    Args:
        adapter: an Adapter for service type ``baremetal`` (endpoint
            override, interface and region already set).
        api_version: a pin such as ``"1.58"``, or ``None``/``"latest"`` to
            negotiate.
        retry_policy: budget for transient failures.
        sleep: injected for tests; defaults to :func:`time.sleep`.
    """

    def __init__(
        self,
        adapter: ks_adapter.Adapter,
        *,
        api_version: str | versions.Version | None = None,
        retry_policy: retries.RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.adapter = adapter
        self.pinned = versions.parse_pin(api_version)
        self.retry_policy = retry_policy or retries.RetryPolicy()
        self._sleep = sleep
        self._root: str | None = None
        self.server_range: VersionRange | None = None

    @property
    def request_timeout(self) -> float | None:
        """The session's per-request timeout in seconds, if it has one."""
        timeout = getattr(self.adapter.session, "timeout", None)
        return float(timeout) if timeout is not None else None

    # -- endpoint -------------------------------------------------------

    @property
    def root(self) -> str:
        """The API root URL (without ``/v1``), resolved once."""
        if self._root is None:
            # keystoneauth1 is loaded already: it made the adapter.
            from keystoneauth1 import exceptions as ks_exc

            try:
                endpoint = self.adapter.get_endpoint()
            except ks_exc.ConnectionError as exc:
                auth = getattr(self.adapter.session, "auth", None)
                raise exceptions.ConnectionFailed(
                    str(getattr(auth, "auth_url", None) or "its URL"),
                    _reason(exc), service="identity service",
                ) from exc
            except ks_exc.ClientException as exc:
                raise _from_keystoneauth(
                    exc, "Cannot determine the bare metal endpoint"
                ) from exc
            if not endpoint:
                raise exceptions.ConfigurationError(
                    "No bare metal endpoint: pass an endpoint URL, set "
                    "baremetal_endpoint_override or use a cloud whose "
                    "catalog lists the baremetal service"
                )
            self._root = root_endpoint(endpoint)
        return self._root

    def url(self, path: str) -> str:
        """Return the absolute URL for an API path like ``/v1/nodes``."""
        return self.root + path

    # -- versions -------------------------------------------------------

    @property
    def api_version(self) -> versions.Version:
        """The version this transport sends, discovering it if unknown."""
        if self.pinned is not None:
            return self.pinned
        if self.server_range is None:
            self.discover()
        return versions.choose_version(self.server_range)

    def discover(self) -> VersionRange | None:
        """Read the server's version range from the root document.

        One ``GET /``; the result is kept for the life of the transport.
        """
        response = self._send("GET", self.root + "/", version=None)
        if response.status_code >= 400:
            raise self._error(response)
        learned = versions.range_from_headers(response.headers)
        if learned is None:
            learned = versions.range_from_document(self.json(response))
        if learned is None:
            raise exceptions.InvalidResponse(
                f"{self.root}/ did not describe the bare metal API versions"
            )
        self.server_range = learned
        return learned

    def _version_for(self, feature: versions.Feature) -> versions.Version:
        if self.pinned is not None:
            version = self.pinned
        else:
            version = versions.choose_version(self.server_range)
            if (
                self.server_range is not None
                and version < self.server_range[0]
            ):
                # The server dropped every version this client speaks.
                raise exceptions.VersionNotSupported(
                    "this client (API up to "
                    f"{versions.format_version(versions.CLIENT_MAX_VERSION)})",
                    None,
                    server_min=self.server_range[0],
                    server_max=self.server_range[1],
                )
        versions.check_feature(
            feature,
            version,
            server_range=self.server_range,
            pinned=self.pinned,
        )
        return version

    def _raised(self, wanted: versions.Version) -> versions.Version:
        """``wanted`` if the server's range reaches it (a pin does not
        stop it: it is asked for one request only)."""
        if self.server_range is None:
            self.discover()
        assert self.server_range is not None
        if self.server_range[1] < wanted:
            raise exceptions.VersionNotSupported(
                "node shards", wanted,
                server_min=self.server_range[0],
                server_max=self.server_range[1],
            )
        return wanted

    def _learn(self, response: requests.Response) -> None:
        if self.server_range is None:
            self.server_range = versions.range_from_headers(response.headers)

    # -- requests -------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        feature: versions.Feature,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        deadline: budget.Deadline | None = None,
        idempotent: bool = False,
        at_least: versions.Version | None = None,
    ) -> requests.Response:
        """Send one API call at the right version; raise typed errors.

        ``deadline`` bounds every attempt and retry (DeadlineExceeded when
        it runs out); without one, the current operation's deadline
        (:func:`budget.current`) does.  ``idempotent`` says that
        repeating the request is harmless, so any lost connection (reset,
        timeout) is retried, not only a refused one.  ``at_least`` raises
        the version of this one request above the client's maximum (for
        fields the caller reads as raw JSON, such as a node's ``shard``
        at 1.82), when the server supports it.

        Returns the successful response.  Raises HttpError subclasses
        (``retried`` set when more than one attempt was sent),
        VersionNotSupported, ConnectionFailed or DeadlineExceeded, with
        ``outcome_unknown`` set when an attempt may have been applied.
        """
        attempt = _Attempt(deadline or budget.current()
                           or budget.unlimited(), idempotent)
        try:
            return self._request(method, path, feature, attempt, params=params,
                                 json=json, headers=headers,
                                 at_least=at_least)
        except exceptions.ClientError as exc:
            exc.outcome_unknown = attempt.unknown
            raise

    def _request(
        self, method: str, path: str, feature: versions.Feature,
        attempt: _Attempt, *, params: Mapping[str, Any] | None,
        json: Any, headers: Mapping[str, str] | None,
        at_least: versions.Version | None,
    ) -> requests.Response:
        url = self.url(path)
        version = self._version_for(feature)
        if at_least is not None and version < at_least:
            version = self._raised(at_least)
        response = self._send(
            method, url, version, params=params, json=json, headers=headers,
            attempt=attempt,
        )
        self._learn(response)
        if response.status_code == 406:
            response = self._renegotiate(
                response,
                method,
                url,
                version,
                feature=feature,
                params=params,
                json=json,
                headers=headers,
                attempt=attempt,
            )
        if response.status_code >= 400:
            error = self._error(response)
            error.retried = attempt.count > 1
            raise error
        return response

    def _renegotiate(
        self,
        response: requests.Response,
        method: str,
        url: str,
        version: versions.Version,
        *,
        feature: versions.Feature,
        params: Mapping[str, Any] | None,
        json: Any,
        headers: Mapping[str, str] | None,
        attempt: _Attempt,
    ) -> requests.Response:
        """Handle a 406: retry once at the server's maximum if it helps."""
        learned = versions.range_from_headers(response.headers)
        if learned is None:
            try:
                learned = self.discover()
            except exceptions.ClientError:
                learned = None
        if not versions.is_version_rejection(version, learned):
            return response  # A genuine NotAcceptable about the content.
        if learned is None:
            return response
        self.server_range = learned
        if self.pinned is not None:
            raise exceptions.VersionNotSupported(
                "the pinned API version",
                None,
                server_min=learned[0],
                server_max=learned[1],
                requested=self.pinned,
            )
        retry_version = self._version_for(feature)
        if retry_version == version:
            return response
        LOG.debug(
            "Server rejected API %s, retrying at %s",
            versions.format_version(version),
            versions.format_version(retry_version),
        )
        retried = self._send(
            method, url, retry_version, params=params, json=json,
            headers=headers, attempt=attempt,
        )
        return retried

    def _send(
        self,
        method: str,
        url: str,
        version: versions.Version | None,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        attempt: _Attempt | None = None,
    ) -> requests.Response:
        """Send with the retry budget; return the last response."""
        attempt = attempt or _Attempt(
            budget.current() or budget.unlimited(), False)
        kwargs: dict[str, Any] = {
            "raise_exc": False,
            "headers": {"Accept": "application/json", **(headers or {})},
        }
        if version is not None:
            kwargs["microversion"] = versions.format_version(version)
        if params:
            kwargs["params"] = dict(params)
        if json is not None:
            kwargs["json"] = json
        delays = self.retry_policy.delays()
        from keystoneauth1 import exceptions as ks_exc

        while True:
            try:
                response = self._send_once(method, url, attempt, kwargs)
            except ks_exc.ConnectionError as exc:
                attempt.lost(exc)
                delay = next(delays, None)
                if (delay is None or not attempt.deadline.allows(delay)
                        or not attempt.may_repeat(exc)):
                    raise exceptions.ConnectionFailed(
                        self._safe_root(), _reason(exc)
                    ) from exc
                LOG.debug("%s %s: %s; retrying in %.2fs", method, url,
                          _reason(exc), delay)
                self._sleep(delay)
                continue
            if response.status_code < 400:
                return response
            if response.status_code >= 500:
                attempt.unknown = True
            message, _doc = exceptions.parse_error_body(response.content)
            if not retries.is_transient_status(
                response.status_code, message, method
            ):
                return response
            delay = next(delays, None)
            if delay is None:
                return response
            hinted = retries.retry_after(
                response.headers.get("Retry-After"), self.retry_policy
            )
            if hinted is not None:
                delay = hinted
            if not attempt.deadline.allows(delay):
                return response
            LOG.debug("%s %s: HTTP %d; retrying in %.2fs", method, url,
                      response.status_code, delay)
            self._sleep(delay)

    def _send_once(
        self, method: str, url: str, attempt: _Attempt,
        kwargs: dict[str, Any],
    ) -> requests.Response:
        """One attempt, bounded by the deadline (DeadlineExceeded)."""
        deadline = attempt.deadline
        if deadline.expired():
            raise exceptions.DeadlineExceeded(method, url)
        timeout = deadline.request_timeout(self.request_timeout)
        if timeout is not None:
            kwargs["timeout"] = timeout
        attempt.count += 1
        from keystoneauth1 import exceptions as ks_exc

        try:
            if deadline.remaining() is None:
                response: requests.Response = self.adapter.request(
                    url, method, **kwargs
                )
            else:
                # requests' timeout bounds each socket read, not the
                # whole answer: a server that dribbles its answer could
                # outlive the budget.  Wait for the whole of it instead.
                response = _within(
                    deadline.remaining() or 0.0,
                    lambda: self.adapter.request(url, method, **kwargs),
                )
        except _Overdue as exc:
            attempt.unknown = True
            raise exceptions.DeadlineExceeded(method, url) from exc
        except ks_exc.ConnectTimeout as exc:
            if deadline.expired():
                attempt.unknown = True
                raise exceptions.DeadlineExceeded(method, url) from exc
            raise
        except ks_exc.ConnectionError:
            raise
        except ks_exc.ClientException as exc:
            raise _from_keystoneauth(exc, "Authentication failed") from exc
        return response

    def _safe_root(self) -> str:
        return self._root or "the configured endpoint"

    @staticmethod
    def _error(response: requests.Response) -> exceptions.HttpError:
        request = response.request
        return exceptions.from_response(
            response.status_code,
            response.content,
            reason=response.reason,
            request_id=response.headers.get(REQUEST_ID_HEADER),
            method=request.method if request is not None else None,
            url=request.url if request is not None else None,
        )

    @staticmethod
    def json(response: requests.Response) -> Any:
        """Decode a successful response's JSON body (InvalidResponse)."""
        try:
            return response.json()
        except ValueError as exc:
            raise exceptions.InvalidResponse(
                f"Expected JSON from {response.url}, got "
                f"{response.headers.get('Content-Type', 'no content type')}",
                status_code=response.status_code,
            ) from exc


class _Overdue(Exception):
    """A call did not finish within its time."""


def _within(seconds: float, call: Callable[[], requests.Response]
            ) -> requests.Response:
    """Run ``call`` in a daemon thread; _Overdue if it takes longer than
    ``seconds``.  The waiting thread stays interruptible (Ctrl-C); an
    overdue call is abandoned and finishes in the background."""
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the waiting thread
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="request", daemon=True).start()
    if not done.wait(seconds):
        raise _Overdue()
    if "error" in outcome:
        raise outcome["error"]
    response: requests.Response = outcome["value"]
    return response


class _Attempt:
    """Per-call bookkeeping: the deadline and how often it was sent."""

    def __init__(self, deadline: budget.Deadline, idempotent: bool) -> None:
        self.deadline = deadline
        self.idempotent = idempotent
        self.count = 0
        #: An attempt was sent and may have been applied: it got no
        #: answer, lost its connection after connecting, or a 5xx.
        self.unknown = False

    def lost(self, error: BaseException) -> None:
        """Record a failed attempt: only a refused connection certainly
        sent nothing (keystoneauth reports a read timeout as a
        ConnectTimeout too)."""
        if not is_transient_connection_error(error):
            self.unknown = True

    def may_repeat(self, error: BaseException) -> bool:
        """A refused connection never reached the server; any other lost
        connection may have, so only an idempotent call repeats then."""
        return self.idempotent or is_transient_connection_error(error)


def quote(ident: str) -> str:
    """Quote a UUID or name for use as one path segment."""
    if not ident:
        raise exceptions.InvalidArgument("An identifier must not be empty")
    return urllib.parse.quote(ident, safe="")
