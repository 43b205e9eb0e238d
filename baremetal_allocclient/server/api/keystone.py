"""Keystone tokens: keystonemiddleware's ``auth_token``, as in Ironic.

The configuration is Ironic's ``[keystone_authtoken]`` section, read with
oslo.config from the file ``serve --keystone-config`` names; the service
password may instead come from the environment variable
:data:`PASSWORD_ENV` (oslo.config's environment source), so it is never
needed on the command line.

``auth_token`` validates the token with Keystone (and caches the answer);
a missing or invalid token gets its 401 (the body and ``WWW-Authenticate``
header Ironic answers with).  A valid token becomes a
:class:`~baremetal_allocclient.server.api.auth.Principal` by
:func:`principal_from_headers`, and from there on the policy of
``--auth-projects`` applies unchanged (``server/api/policy.py``).

All configuration is the one oslo.config group :data:`GROUP`;
:func:`wrapper` takes any ``ConfigOpts`` holding it, so a ``serve`` that
reads its own configuration files can pass its object instead of
:func:`load_config`'s.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from baremetal_allocclient.constraints import EXPLAIN_PATH
from baremetal_allocclient.server.api import auth

#: The oslo.config group: Ironic's name and keystonemiddleware's options.
GROUP = "keystone_authtoken"
#: Where the service user's password may come from instead of the file.
PASSWORD_ENV = "OS_KEYSTONE_AUTHTOKEN__PASSWORD"  # noqa: S105 - a name
#: Roles (after Keystone's implied roles) that may change what they see.
WRITER_ROLES = frozenset({"admin", "member"})
READER_ROLE = "reader"


class KeystoneConfigError(Exception):
    """A ``[keystone_authtoken]`` configuration that cannot be served."""


def load_config(path: str) -> Any:
    """An oslo.config ``ConfigOpts`` read from ``path`` (and the env)."""
    from oslo_config import cfg

    if not os.path.isfile(path):
        raise KeystoneConfigError(f"cannot read {path}: no such file")
    conf = cfg.ConfigOpts()
    try:
        conf(args=[], project="baremetal-alloc",
             default_config_files=[path], default_config_dirs=[])
    except cfg.Error as exc:
        raise KeystoneConfigError(f"cannot read {path}: {exc}") from exc
    return conf


def _roles(environ: Mapping[str, Any]) -> set[str]:
    raw = str(environ.get("HTTP_X_ROLES") or "")
    return {role.strip().lower() for role in raw.split(",") if role.strip()}


def principal_from_headers(
    environ: Mapping[str, Any],
) -> auth.Principal | None:
    """Who a validated token stands for (pure); None: no role here.

    A system-scoped token with ``admin`` is an admin; with only
    ``reader`` or ``member`` it reads everything and changes nothing.  A
    project-scoped token with ``admin`` or ``member`` is a member of that
    project, with only ``reader`` a read-only member.  Other scopes
    (domain, unscoped) and other roles have no role on this service.
    """
    roles = _roles(environ)
    user = environ.get("HTTP_X_USER_NAME") or environ.get("HTTP_X_USER_ID")
    user = str(user) if user else None
    if environ.get("HTTP_OPENSTACK_SYSTEM_SCOPE") == "all":
        if "admin" in roles:
            return auth.Principal(user, None, True)
        if roles & {READER_ROLE, "member"}:
            return auth.Principal(user, None, True, read_only=True)
        return None
    project = environ.get("HTTP_X_PROJECT_ID")
    if not project:
        return None
    if roles & WRITER_ROLES:
        return auth.Principal(user, str(project), False)
    if READER_ROLE in roles:
        return auth.Principal(user, str(project), False, read_only=True)
    return None


def reader_may(method: str, path: str) -> bool:
    """Read-only principals read, and ask for explanations (pure)."""
    if method in ("GET", "HEAD"):
        return True
    return method == "POST" and path == EXPLAIN_PATH


def check(principal: auth.Principal | None, method: str, path: str,
          user: str | None) -> auth.Principal:
    """The request's principal, or :class:`auth.Rejected` (403)."""
    if principal is None:
        raise auth.Rejected(
            403, f"User {user or 'unknown'} has no role on this service "
                 f"in the token's scope")
    if principal.read_only and not reader_may(method, path):
        raise auth.Rejected(403, "A reader may not change anything")
    if not principal.admin and not auth.member_may(method, path):
        raise auth.Rejected(403, "Only an admin may change nodes")
    return principal


class _Authorize:
    """Behind ``auth_token``: the token's scope and roles to a principal."""

    def __init__(self, app: auth.WsgiApp) -> None:
        self._app = app

    def __call__(self, environ: dict[str, Any],
                 start_response: auth.StartResponse) -> Iterable[bytes]:
        path = (environ.get("PATH_INFO") or "/").rstrip("/") or "/"
        method = str(environ.get("REQUEST_METHOD", "GET")).upper()
        user = environ.get("HTTP_X_USER_NAME")
        try:
            principal = check(principal_from_headers(environ), method,
                              path, user)
        except auth.Rejected as exc:
            return auth.reject(exc, environ, start_response, realm=None)
        environ[auth.ENVIRON_KEY] = principal
        environ["REMOTE_USER"] = principal.user or ""
        return self._app(environ, start_response)


class KeystoneMiddleware:
    """Public paths go straight on; everything else through auth_token."""

    def __init__(self, app: auth.WsgiApp, conf: Any) -> None:
        from keystonemiddleware import auth_token

        self._public = app
        self._protected = auth_token.AuthProtocol(
            _Authorize(app), {"oslo_config_config": conf})

    def __call__(self, environ: dict[str, Any],
                 start_response: auth.StartResponse) -> Iterable[bytes]:
        path = (environ.get("PATH_INFO") or "/").rstrip("/") or "/"
        if path in auth.PUBLIC_PATHS:
            return self._public(environ, start_response)
        result: Iterable[bytes] = self._protected(environ, start_response)
        return result


def _refuse(environ: dict[str, Any],
            start_response: auth.StartResponse) -> Iterable[bytes]:
    raise AssertionError("the configuration probe serves nothing")


def wrapper(conf: Any) -> Any:
    """``serve``'s WSGI wrapper; a bad configuration fails here, at start.

    Building the middleware once loads the service user's options
    (keystoneauth1 checks the required ones) before the first request.
    """
    from keystoneauth1 import exceptions as ks_exceptions

    try:
        KeystoneMiddleware(_refuse, conf)
    except ks_exceptions.ClientException as exc:
        raise KeystoneConfigError(f"[{GROUP}]: {exc}") from exc
    missing = [name for name in ("www_authenticate_uri", "auth_type")
               if not conf[GROUP][name]]
    if missing:
        raise KeystoneConfigError(
            f"[{GROUP}] needs {' and '.join(missing)}, as Ironic's "
            f"configuration does")
    return lambda app: KeystoneMiddleware(app, conf)
