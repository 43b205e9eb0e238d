"""Request paths as Ironic reads them, before authentication and routing.

Two rules of Ironic 39 that clients rely on:

* a path without the version prefix is served as v1: ``/nodes/<uuid>``
  is ``/v1/nodes/<uuid>`` (Ironic's root controller), so the
  ``bookmark`` links every resource carries resolve;
* a ``.json`` suffix is dropped when the request asks for a version
  below 1.91 (Ironic's ``JsonExtensionMiddleware``; from 1.91 it is part
  of the last segment, and without a version header it is kept too).

:func:`canonical` is the rule (pure); :class:`CanonicalPaths` applies it
to ``PATH_INFO`` outside authentication, so the role checks and the
router see the path that is served.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from baremetal_allocclient.server.api import versions

_VERSION_ENVIRON = "HTTP_" + versions.HEADER.upper().replace("-", "_")
_SUFFIX = ".json"
_PREFIX = "/v1"


def _drops_suffix(header: str | None) -> bool:
    """Whether a request with this version header loses ``.json``: an
    explicit version 1.1 to 1.90, as Ironic's middleware reads it."""
    if not header:
        return False
    major, dot, minor = header.strip().partition(".")
    if not dot or not major.isdigit() or not minor.isdigit():
        return False  # "latest" and malformed ones: not dropped
    return 0 < int(minor) < versions.JSON_SUFFIX_KEPT


def canonical(path: str, header: str | None,
              unversioned: Iterable[str] = ()) -> str:
    """The path served for ``path`` under the version ``header`` (pure).

    ``unversioned``: paths served as they are (``/metrics``): they never
    get the ``/v1`` prefix.
    """
    stripped = path.rstrip("/") or path
    if stripped.endswith(_SUFFIX) and _drops_suffix(header):
        path = stripped[:-len(_SUFFIX)]
    first = path.lstrip("/").split("/", 1)[0]
    if first and first != _PREFIX[1:] and (
            path.rstrip("/") not in unversioned):
        path = _PREFIX + ("" if path.startswith("/") else "/") + path
    return path


class CanonicalPaths:
    """WSGI middleware: ``PATH_INFO`` made :func:`canonical`."""

    def __init__(self, app: Callable[..., Iterable[bytes]],
                 unversioned: Iterable[str] = ()) -> None:
        self._app = app
        self._unversioned = frozenset(unversioned)

    def __call__(self, environ: dict[str, Any],
                 start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or "/"
        served = canonical(path, environ.get(_VERSION_ENVIRON),
                           self._unversioned)
        if served != path:
            environ["PATH_INFO"] = served
        return self._app(environ, start_response)
