"""The request and the response of one WSGI call, as handlers see them.

Only what the API reads of a request (method, path, query, headers,
body) and what it answers (status, headers, a body already encoded),
with werkzeug's rules where they matter to clients: the path and the
query are decoded as werkzeug decodes them, invalid bytes in the query
stay percent-encoded, ``HEAD`` gets the headers of ``GET`` and no body.
A framework's request and response objects cost a poll more than its
database read did, and a poll is the request clients send most.
"""

from __future__ import annotations

import codecs
import functools
import http
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from werkzeug.sansio.utils import get_current_url, get_host

from baremetal_allocclient.server.api.errors import ApiError

JSON = "application/json"
#: The status line of each code, as ``http.HTTPStatus`` names it.
_STATUS_LINES = {status.value: f"{status.value} {status.phrase}"
                 for status in http.HTTPStatus}
_QUERY_ERRORS = "baremetal_alloc.percent_encoded"


def _percent_encoded(error: UnicodeError) -> tuple[str, int]:
    """Undecodable bytes of a query stay percent-encoded (as werkzeug's
    ``werkzeug.url_quote`` error handler keeps them)."""
    assert isinstance(error, UnicodeDecodeError)
    raw = error.object[error.start:error.end]
    return urllib.parse.quote(raw, safe=""), error.end


codecs.register_error(_QUERY_ERRORS, _percent_encoded)


class Query(Mapping[str, str]):
    """The query string's parameters: a mapping to each name's first
    value, with every pair in order in :attr:`pairs`."""

    __slots__ = ("_first", "pairs")

    def __init__(self, query_string: str) -> None:
        #: (name, value) in the order sent, repeated names included.
        self.pairs: list[tuple[str, str]] = urllib.parse.parse_qsl(
            query_string, keep_blank_values=True, errors=_QUERY_ERRORS
        ) if query_string else []
        self._first: dict[str, str] = {}
        for name, value in self.pairs:
            self._first.setdefault(name, value)

    def getlist(self, name: str) -> list[str]:
        """Every value of ``name``, in order."""
        return [value for key, value in self.pairs if key == name]

    def __getitem__(self, name: str) -> str:
        return self._first[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._first)

    def __len__(self) -> int:
        return len(self._first)


class Headers:
    """The request's headers, read from the WSGI environment (the
    server joined repeated ones)."""

    __slots__ = ("_environ",)

    def __init__(self, environ: Mapping[str, Any]) -> None:
        self._environ = environ

    def get(self, name: str, default: str | None = None) -> str | None:
        value = self._environ.get(_environ_key(name))
        return default if value is None else str(value)

    def getlist(self, name: str) -> list[str]:
        value = self.get(name)
        return [] if value is None else [value]


@functools.lru_cache(maxsize=64)
def _environ_key(name: str) -> str:
    """The WSGI environment's key of a header (made once per name: the
    names come from the code, a few dozen)."""
    key = name.upper().replace("-", "_")
    if key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        return key
    return "HTTP_" + key


@functools.lru_cache(maxsize=64)
def _base_url(scheme: str, host_header: str | None, server_name: str,
              server_port: str) -> str:
    """The URL the API is reached at, without a trailing slash: werkzeug's
    host rules and conversion to a URI, done once per host."""
    host = get_host(scheme, host_header, (server_name, int(server_port))
                    if server_port.isdigit() else (server_name, None))
    return get_current_url(scheme, host).rstrip("/")


class Request:
    """One request: parsed where it is cheap, the rest when asked for."""

    __slots__ = ("_body", "_query", "environ", "headers", "method", "path")

    def __init__(self, environ: dict[str, Any]) -> None:
        self.environ = environ
        self.method: str = environ.get("REQUEST_METHOD", "GET").upper()
        self.path = "/" + environ_text(
            environ.get("PATH_INFO") or "").lstrip("/")
        self.headers = Headers(environ)
        self._query: Query | None = None
        self._body: bytes | None = None

    @property
    def query_string(self) -> str:
        return environ_text(self.environ.get("QUERY_STRING", ""))

    @property
    def args(self) -> Query:
        """The query's parameters (parsed on first use)."""
        if self._query is None:
            self._query = Query(self.query_string)
        return self._query

    @property
    def full_path(self) -> str:
        """The path and the query string, for the log."""
        query = self.query_string
        return f"{self.path}?{query}" if query else self.path

    @property
    def base_url(self) -> str:
        environ = self.environ
        return _base_url(environ.get("wsgi.url_scheme", "http"),
                         environ.get("HTTP_HOST"),
                         environ.get("SERVER_NAME", ""),
                         str(environ.get("SERVER_PORT", "")))

    @property
    def content_length(self) -> int | None:
        """The declared body length, None without one (a chunked body)."""
        text = self.environ.get("CONTENT_LENGTH") or ""
        return int(text) if text.isdigit() else None

    def body(self, limit: int) -> bytes:
        """The body, read from the stream once and kept (a handler run
        again after a deadlock gets it again); 413 when it is longer than
        ``limit`` bytes, declared so or found so while reading a chunked
        one."""
        if self._body is None:
            self._body = self._read(limit)
        if len(self._body) > limit:
            raise too_large(limit)
        return self._body

    def _read(self, limit: int) -> bytes:
        length = self.content_length
        if length is not None and length > limit:
            raise too_large(limit)
        stream = self.environ.get("wsgi.input")
        if stream is None or length == 0:
            return b""
        data: bytes = stream.read(limit + 1 if length is None else length)
        return data


def environ_text(value: str) -> str:
    """A WSGI environment string (bytes as latin-1) as the UTF-8 text
    the client sent; undecodable bytes become U+FFFD."""
    if value.isascii():
        return value
    return value.encode("latin-1").decode(errors="replace")


def too_large(limit: int) -> ApiError:
    return ApiError(413, f"Request body is too large (at most {limit} "
                         f"bytes)")


class Response:
    """A status, headers and a body already encoded; a WSGI application
    (``HEAD``, 204 and 1xx answers go without a body)."""

    __slots__ = ("body", "headers", "status_code")

    def __init__(self, body: bytes | str = b"", status: int = 200,
                 content_type: str | None = JSON) -> None:
        self.status_code = status
        self.body = body.encode() if isinstance(body, str) else body
        #: The headers to send, by name (Content-Length is added).
        self.headers: dict[str, str] = {}
        if content_type is not None:
            self.headers["Content-Type"] = content_type

    def header_list(self) -> list[tuple[str, str]]:
        """The headers to send, Content-Length included where a body may
        be (its length for a ``HEAD``, as for the ``GET``)."""
        headers = [(name, _header_value(value))
                   for name, value in self.headers.items()]
        if self.status_code >= 200 and self.status_code != 204:
            headers.append(("Content-Length", str(len(self.body))))
        return headers

    def __call__(self, environ: dict[str, Any],
                 start_response: Callable[..., Any]) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "GET").upper()
        status = self.status_code
        start_response(_STATUS_LINES.get(status, f"{status} Unknown"),
                       self.header_list())
        if method == "HEAD" or status < 200 or status == 204:
            return []
        return [self.body]


def _header_value(value: str) -> str:
    """A header value WSGI can send: non-ASCII text (a name in a
    ``Location``) percent-encoded as UTF-8, as werkzeug does for IRIs."""
    if value.isascii():
        return value
    return urllib.parse.quote(value, safe="/:?#[]@!$&'()*+,;=%")
