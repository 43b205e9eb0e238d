"""A request reads as werkzeug read it, routes go where werkzeug's map
sent them, and responses keep the framing clients relied on."""

from __future__ import annotations

import io
from typing import Any

import testtools
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from werkzeug.exceptions import MethodNotAllowed, NotFound
from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request as WerkzeugRequest

from baremetal_allocclient.server.api import http
from baremetal_allocclient.server.api.errors import ApiError, RouteError
from baremetal_allocclient.server.api.routing import Route, Router
from baremetal_allocclient.server.app import _ROUTES

# What a WSGI server puts in the environment: bytes as latin-1 text.
_WIRE = st.text(st.characters(max_codepoint=255), max_size=30)
_QUERY = st.lists(
    st.tuples(st.sampled_from(["a", "b", "fields", "", "%E9", "%C3%A9"]),
              st.sampled_from(["", "1", "x+y", "%ZZ", "%E9", "%C3%A9",
                               "a=b", "%00"])),
    max_size=5,
).map(lambda pairs: "&".join(f"{k}={v}" for k, v in pairs))


def environ(path: str = "/", query: str = "", method: str = "GET",
            body: bytes | None = None, **extra: Any) -> dict[str, Any]:
    env: dict[str, Any] = {
        "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query,
        "SERVER_NAME": "localhost", "SERVER_PORT": "80",
        "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body or b""),
    }
    if body is not None:
        env["CONTENT_LENGTH"] = str(len(body))
    env.update(extra)
    return env


def werkzeug_or_none(env: dict[str, Any]) -> WerkzeugRequest | None:
    """werkzeug's request, None where werkzeug itself fails (a raw
    query byte that is not UTF-8: werkzeug raised, which was a 500)."""
    request = WerkzeugRequest(dict(env))
    try:
        request.args  # noqa: B018 - parsed lazily
    except UnicodeDecodeError:
        return None
    return request


class RequestTests(testtools.TestCase):

    @settings(max_examples=300, deadline=None)
    @given(path=_WIRE, query=st.one_of(_QUERY, _WIRE))
    def test_path_and_query_read_as_werkzeug_read_them(
            self, path: str, query: str) -> None:
        env = environ(path, query)
        theirs = werkzeug_or_none(env)
        ours = http.Request(dict(env))
        pairs = ours.args.pairs  # never raises
        assume(theirs is not None)
        assert theirs is not None
        self.assertEqual(theirs.path, ours.path)
        # The same values for the same names (werkzeug listed a name's
        # values together; the pairs here stay in the order sent).
        grouped: dict[str, list[str]] = {}
        for name, value in pairs:
            grouped.setdefault(name, []).append(value)
        self.assertEqual(list(theirs.args.lists()), list(grouped.items()))
        self.assertEqual(dict(theirs.args), dict(ours.args))
        for name in grouped:
            self.assertEqual(theirs.args.getlist(name),
                             ours.args.getlist(name))

    def test_undecodable_query_bytes_stay_percent_encoded(self) -> None:
        request = http.Request(environ(query="x=%E9&y=%C3%A9&z=%ZZ"))
        self.assertEqual([("x", "%E9"), ("y", "é"), ("z", "%ZZ")],
                         request.args.pairs)

    def test_headers_read_from_the_environment(self) -> None:
        request = http.Request(environ(
            HTTP_X_OPENSTACK_IRONIC_API_VERSION="1.52",
            CONTENT_TYPE="application/json", HTTP_PREFER="wait=5"))
        self.assertEqual("1.52", request.headers.get(
            "X-OpenStack-Ironic-API-Version"))
        self.assertEqual("application/json",
                         request.headers.get("Content-Type"))
        self.assertEqual(["wait=5"], request.headers.getlist("Prefer"))
        self.assertEqual([], request.headers.getlist("Missing"))
        self.assertEqual("-", request.headers.get("Missing", "-"))

    def test_base_url_as_werkzeug_builds_it(self) -> None:
        for extra in ({}, {"HTTP_HOST": "example.com:80"},
                      {"HTTP_HOST": "example.com:6385"},
                      {"HTTP_HOST": "[::1]:6385"},
                      {"HTTP_HOST": "bücher.example"},
                      {"wsgi.url_scheme": "https", "SERVER_PORT": "443"}):
            env = environ(**extra)
            theirs = WerkzeugRequest(dict(env)).host_url.rstrip("/")
            self.assertEqual(theirs, http.Request(env).base_url, extra)

    def test_declared_body_over_the_limit_is_413_before_reading(
            self) -> None:
        stream = io.BytesIO(b"x" * 11)
        request = http.Request(environ(
            body=b"", CONTENT_LENGTH="11", **{"wsgi.input": stream}))
        error = self.assertRaises(ApiError, request.body, 10)
        self.assertEqual(413, error.status)
        self.assertEqual(0, stream.tell())

    def test_chunked_body_over_the_limit_is_413(self) -> None:
        env = environ(body=b"x" * 11)
        del env["CONTENT_LENGTH"]  # what a chunked request looks like
        self.assertEqual(413, self.assertRaises(
            ApiError, http.Request(env).body, 10).status)
        env = environ(body=b"x" * 10)
        del env["CONTENT_LENGTH"]
        self.assertEqual(b"x" * 10, http.Request(env).body(10))

    def test_body_is_the_same_when_read_again(self) -> None:
        # A handler run again after a deadlock reads the body again.
        request = http.Request(environ(method="POST", body=b'{"a": 1}'))
        self.assertEqual(b'{"a": 1}', request.body(100))
        self.assertEqual(b'{"a": 1}', request.body(100))


def call(response: http.Response, method: str = "GET"
         ) -> tuple[str, list[tuple[str, str]], bytes]:
    started: list[Any] = []
    body = b"".join(response(environ(method=method),
                             lambda *args: started.extend(args)))
    return started[0], started[1], body


class ResponseTests(testtools.TestCase):

    def test_json_body_with_its_length(self) -> None:
        status, headers, body = call(http.Response('{"a": "é"}', 201))
        self.assertEqual("201 Created", status)
        self.assertEqual('{"a": "é"}'.encode(), body)
        self.assertEqual([("Content-Type", "application/json"),
                          ("Content-Length", str(len(body)))], headers)

    def test_head_has_the_get_headers_and_no_body(self) -> None:
        _status, get_headers, _body = call(http.Response("[1, 2]"))
        status, headers, body = call(http.Response("[1, 2]"), "HEAD")
        self.assertEqual(("200 OK", get_headers, b""),
                         (status, headers, body))

    def test_no_content_has_no_length_and_accepted_an_empty_body(
            self) -> None:
        status, headers, body = call(http.Response(status=204,
                                                   content_type=None))
        self.assertEqual(("204 No Content", [], b""),
                         (status, headers, body))
        status, headers, body = call(http.Response(status=202,
                                                   content_type=None))
        self.assertEqual(("202 Accepted", [("Content-Length", "0")], b""),
                         (status, headers, body))

    def test_a_non_ascii_location_is_percent_encoded(self) -> None:
        response = http.Response("{}", 201)
        response.headers["Location"] = "http://h/v1/nodes/nœud"
        _status, headers, _body = call(response)
        self.assertIn(("Location", "http://h/v1/nodes/n%C5%93ud"), headers)


_SEGMENT = st.sampled_from(["detail", "x", "allocation", "traits", "ports",
                            "CUSTOM_A", "states", "provision", "v1", "é"])
_METHODS = st.sampled_from(["GET", "HEAD", "OPTIONS", "POST", "PUT",
                            "PATCH", "DELETE"])


def werkzeug_route(adapter: Any, path: str, method: str
                   ) -> tuple[str, dict[str, str]] | int:
    try:
        endpoint, args = adapter.match(path, method=method)
    except NotFound:
        return 404
    except MethodNotAllowed:
        return 405
    return str(endpoint), dict(args)


def our_route(router: Router, path: str, method: str
              ) -> tuple[str, dict[str, str]] | int:
    try:
        route, args = router.match(path, method)
    except RouteError as exc:
        return exc.status
    return route.endpoint, args


@st.composite
def paths(draw: st.DrawFn) -> str:
    """A route's template filled in, sometimes bent: a trailing slash,
    an empty or extra segment, a literal replaced."""
    template = draw(st.sampled_from([path for path, _m, _h in _ROUTES]))
    segments = [draw(_SEGMENT) if part.startswith("<") else part
                for part in template.strip("/").split("/")]
    bend = draw(st.sampled_from(["none", "slash", "empty", "extra",
                                 "replace", "double-slash"]))
    if bend == "empty":
        segments[draw(st.integers(0, len(segments) - 1))] = ""
    elif bend == "extra":
        segments.append(draw(_SEGMENT))
    elif bend == "replace":
        segments[draw(st.integers(0, len(segments) - 1))] = draw(_SEGMENT)
    path = "/" + "/".join(segments)
    if bend == "slash":
        path += "/"
    elif bend == "double-slash":
        path += "//"
    return path


class RoutingTests(testtools.TestCase):
    """The routing table goes where werkzeug's map (strict_slashes off,
    merge_slashes off) sent every request."""

    def setUp(self) -> None:
        super().setUp()
        rules = Map(strict_slashes=False, merge_slashes=False)
        routes = []
        for index, (path, method, _handler) in enumerate(_ROUTES):
            rules.add(Rule(path, methods=[method], endpoint=f"r{index}"))
            routes.append(Route(path, method, f"r{index}"))
        self.werkzeug = rules.bind("localhost")
        self.router = Router(routes)
        # The table's order does not matter (werkzeug sorted its rules).
        self.reversed_router = Router(reversed(routes))

    @settings(max_examples=500, deadline=None)
    @given(path=paths(), method=_METHODS)
    def test_same_route_as_werkzeug(self, path: str, method: str) -> None:
        expected = werkzeug_route(self.werkzeug, path, method)
        self.assertEqual(expected, our_route(self.router, path, method),
                         path)
        self.assertEqual(expected,
                         our_route(self.reversed_router, path, method), path)

    def test_literal_segment_wins_unless_only_the_other_serves(
            self) -> None:
        for router in (self.router, self.reversed_router):
            route, args = router.match("/v1/nodes/detail", "GET")
            self.assertEqual(("/v1/nodes/detail", {}),
                             (route.template, args))
            route, args = router.match("/v1/nodes/detail", "PATCH")
            self.assertEqual(("/v1/nodes/<ident>", {"ident": "detail"}),
                             (route.template, args))

    def test_unserved_path_is_404_and_unserved_method_405(self) -> None:
        self.assertEqual(404, our_route(self.router, "/v1/nowhere", "GET"))
        self.assertEqual(405, our_route(self.router, "/v1/allocations",
                                        "PUT"))
