"""The routing table, compiled once: a method and a path to a route.

Routes are written ``/v1/nodes/<ident>/traits/<trait>``: a ``<name>``
segment matches any non-empty segment, which is passed to the handler as
the keyword ``name``.  Matching follows the rules clients met while
werkzeug routed these requests:

* one trailing slash is ignored (``/v1/allocations/``); empty segments
  (``/v1//allocations``) match nothing;
* a literal segment wins over a ``<name>`` one at the same place
  (``GET /v1/nodes/detail`` is the detailed list, not a node called
  ``detail``), unless only the latter serves the method
  (``PATCH /v1/nodes/detail`` updates the node called ``detail``);
* ``HEAD`` is served by the ``GET`` route;
* a path no route has is a 404, a path served for other methods a 405,
  both :class:`RouteError` (Ironic's framework's error shape).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from baremetal_allocclient.server.api.errors import RouteError, no_route


@dataclass(frozen=True)
class Route:
    """One route: its template, method and endpoint name."""

    template: str
    method: str
    endpoint: str

    @functools.cached_property
    def segments(self) -> tuple[str, ...]:
        return tuple(self.template.strip("/").split("/"))

    def arguments(self, segments: list[str]) -> dict[str, str] | None:
        """The ``<name>`` arguments when ``segments`` match, else None."""
        found: dict[str, str] = {}
        for pattern, segment in zip(self.segments, segments, strict=True):
            if pattern.startswith("<"):
                if not segment:
                    return None
                found[pattern[1:-1]] = segment
            elif pattern != segment:
                return None
        return found

    @functools.cached_property
    def specificity(self) -> tuple[bool, ...]:
        """Sorts literal segments before ``<name>`` ones, place by place."""
        return tuple(pattern.startswith("<") for pattern in self.segments)


def method_not_allowed() -> RouteError:
    return RouteError(405, "Method Not Allowed")


class Router:
    """Finds the route of a request among ``routes``."""

    def __init__(self, routes: Iterable[Route]) -> None:
        # By number of segments, most specific first.
        self._by_length: dict[int, list[Route]] = {}
        #: The routes without a ``<name>`` segment, by path and method:
        #: a request for one of them needs no search (none is more
        #: specific).
        self._literal: dict[tuple[str, str], Route] = {}
        for route in sorted(routes, key=lambda r: r.specificity):
            self._by_length.setdefault(len(route.segments), []).append(route)
            if not any(route.specificity):
                self._literal.setdefault(
                    ("/" + "/".join(route.segments), route.method), route)

    def match(self, path: str, method: str
              ) -> tuple[Route, dict[str, str]]:
        """The route serving ``method`` on ``path`` and its arguments;
        :class:`RouteError` 404 or 405."""
        if path.endswith("/") and path != "/":
            path = path[:-1]
        wanted = "GET" if method == "HEAD" else method
        literal = self._literal.get((path, wanted))
        if literal is not None:
            return literal, {}
        segments = path[1:].split("/")
        path_served = False
        for route in self._by_length.get(len(segments), ()):
            arguments = route.arguments(segments)
            if arguments is None:
                continue
            if route.method == wanted:
                return route, arguments
            path_served = True
        raise method_not_allowed() if path_served else no_route()
