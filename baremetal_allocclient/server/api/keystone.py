"""Keystone tokens: keystonemiddleware's ``auth_token``, as in Ironic.

The configuration is Ironic's ``[keystone_authtoken]`` section, read with
oslo.config from the file ``serve --keystone-config`` names; the service
password may instead come from the environment variable
:data:`PASSWORD_ENV` (oslo.config's environment source), so it is never
needed on the command line.

``auth_token`` validates the token with Keystone (and caches the answer);
a missing or invalid token gets its 401 (the body and ``WWW-Authenticate``
header Ironic answers with).  A valid token becomes a
:class:`~baremetal_allocclient.server.api.Principal` by
:func:`principal_from_headers`, and from there on the policy of
``--auth-projects`` applies unchanged (``server/api/policy.py``).

All configuration is the one oslo.config group :data:`GROUP`;
:func:`wrapper` takes any ``ConfigOpts`` holding it, so a ``serve`` that
reads its own configuration files can pass its object instead of
:func:`load_config`'s.

:data:`DEFAULTS` changes four of keystonemiddleware's defaults (Ironic
keeps them); the operator's file still wins.  A revoked token this process
has validated works for ``token_cache_time`` (30 s, not 300); with no
``service_token_roles`` (the default here, not ``service``) the
``X-Service-Token`` header is dropped before ``auth_token`` sees it, so no
service token revives an expired user token (Keystone's allow-expired) or
lifts an application credential's access rules; ``service_type`` is
``baremetal``, so access rules are checked instead of every such
credential refused.  ``doc/source/howto/security.rst`` says what remains.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from baremetal_allocclient.constraints import EXPLAIN_PATH
from baremetal_allocclient.server.api import auth
from baremetal_allocclient.server.config import invalid_value_reason
from baremetal_allocclient.server.domain.principal import Principal

#: The oslo.config group: Ironic's name and keystonemiddleware's options.
GROUP = "keystone_authtoken"
#: Where the service user's password may come from instead of the file.
PASSWORD_ENV = "OS_KEYSTONE_AUTHTOKEN__PASSWORD"  # noqa: S105 - a name
#: Roles (after Keystone's implied roles) that may change what they see.
WRITER_ROLES = frozenset({"admin", "member"})
READER_ROLE = "reader"
#: keystonemiddleware's options whose default this server changes.
DEFAULTS: Mapping[str, Any] = {
    "token_cache_time": 30,
    "service_token_roles": [],
    "service_token_roles_required": True,
    "service_type": "baremetal",
}
_SERVICE_TOKEN = "HTTP_X_SERVICE_TOKEN"  # noqa: S105 - a header name

LOG = logging.getLogger(__name__)


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


@dataclass(frozen=True)
class Settings:
    """The ``[keystone_authtoken]`` values this module decides with."""

    token_cache_time: int
    service_token_roles: tuple[str, ...]
    service_token_roles_required: bool
    service_type: str | None

    @property
    def service_tokens(self) -> bool:
        """Whether ``X-Service-Token`` reaches ``auth_token``."""
        return bool(self.service_token_roles)

    def describe(self) -> str:
        """The start-up log line: the values in force (pure)."""
        roles = list(self.service_token_roles)
        effect = ("a service token with one of these roles revives an "
                  "expired token" if roles else "X-Service-Token ignored")
        return (f"[{GROUP}] token_cache_time = {self.token_cache_time}, "
                f"service_token_roles = {roles} ({effect}), "
                f"service_token_roles_required = "
                f"{self.service_token_roles_required}, "
                f"service_type = {self.service_type}")


def configure(conf: Any) -> Settings:
    """Register keystonemiddleware's options in ``conf`` with this
    server's :data:`DEFAULTS`; the values in force.

    Raises :class:`KeystoneConfigError` for a value oslo.config refuses,
    and (:func:`settings_from`) for ``token_cache_time = 0``, which
    keystonemiddleware's cache takes as "keep forever", and for a
    ``service_type`` without ``include_service_catalog``, with which
    keystonemiddleware fails on an application credential's access rules
    (a 500).
    """
    from keystonemiddleware import auth_token

    names = []
    for group, opts in auth_token.list_opts():
        conf.register_opts(opts, group=group)
        names += [opt.dest for opt in opts if group == GROUP]
    for name, value in DEFAULTS.items():
        conf.set_default(name, value, group=GROUP)
    # Every value read once: a bad one is a line here, not a traceback.
    return settings_from({name: _value(conf, name) for name in names})


def settings_from(values: Mapping[str, Any]) -> Settings:
    """The :class:`Settings` of ``[keystone_authtoken]`` values, or
    :class:`KeystoneConfigError` for a combination not served (pure)."""
    settings = Settings(
        values["token_cache_time"],
        tuple(role for role in values["service_token_roles"] or () if role),
        values["service_token_roles_required"], values["service_type"])
    if settings.token_cache_time == 0:
        raise KeystoneConfigError(
            f"[{GROUP}] token_cache_time = 0 would keep every validated "
            f"token for the life of the process (keystonemiddleware reads "
            f"0 as no expiry); use -1 to validate every request with "
            f"Keystone, or a number of seconds")
    if settings.service_type and not values["include_service_catalog"]:
        raise KeystoneConfigError(
            f"[{GROUP}] include_service_catalog = false leaves "
            f"keystonemiddleware unable to check the access rules of "
            f"application credentials (it answers their requests with a "
            f"500): set include_service_catalog = true, or service_type "
            f"empty to refuse such credentials")
    return settings


def _value(conf: Any, name: str) -> Any:
    from oslo_config import cfg

    try:
        return conf[GROUP][name]
    except (cfg.Error, ValueError) as exc:
        raise KeystoneConfigError(
            f"invalid value for [{GROUP}] {name}: "
            f"{invalid_value_reason(exc)}") from exc


def _roles(environ: Mapping[str, Any]) -> set[str]:
    raw = str(environ.get("HTTP_X_ROLES") or "")
    return {role.strip().lower() for role in raw.split(",") if role.strip()}


def principal_from_headers(
    environ: Mapping[str, Any],
) -> Principal | None:
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
            return Principal(user, None, True)
        if roles & {READER_ROLE, "member"}:
            return Principal(user, None, True, read_only=True)
        return None
    project = environ.get("HTTP_X_PROJECT_ID")
    if not project:
        return None
    if roles & WRITER_ROLES:
        return Principal(user, str(project), False)
    if READER_ROLE in roles:
        return Principal(user, str(project), False, read_only=True)
    return None


def reader_may(method: str, path: str) -> bool:
    """Read-only principals read, and ask for explanations (pure)."""
    if method in ("GET", "HEAD"):
        return True
    return method == "POST" and path == EXPLAIN_PATH


def check(principal: Principal | None, method: str, path: str,
          user: str | None) -> Principal:
    """The request's principal (with a refusal left to the application,
    see :func:`auth.refuse`), or :class:`auth.Rejected` (403)."""
    if principal is None:
        raise auth.Rejected(
            403, f"User {user or 'unknown'} has no role on this service "
                 f"in the token's scope")
    if principal.read_only and not reader_may(method, path):
        return auth.refuse(principal, "A reader may not change anything",
                           path)
    if not principal.admin and not auth.member_may(method, path):
        return auth.refuse(principal, "Only an admin may change nodes",
                           path)
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
    """Public paths go straight on; everything else through auth_token
    (without ``X-Service-Token`` unless service_token_roles names a
    role)."""

    def __init__(self, app: auth.WsgiApp, conf: Any) -> None:
        from keystonemiddleware import auth_token

        self.settings = configure(conf)
        self._public = app
        self._protected = auth_token.AuthProtocol(
            _Authorize(app), {"oslo_config_config": conf})

    def __call__(self, environ: dict[str, Any],
                 start_response: auth.StartResponse) -> Iterable[bytes]:
        path = (environ.get("PATH_INFO") or "/").rstrip("/") or "/"
        if path in auth.PUBLIC_PATHS:
            return self._public(environ, start_response)
        if not self.settings.service_tokens:
            environ.pop(_SERVICE_TOKEN, None)
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
        probe = KeystoneMiddleware(_refuse, conf)
    except ks_exceptions.ClientException as exc:
        raise KeystoneConfigError(f"[{GROUP}]: {exc}") from exc
    missing = [name for name in ("www_authenticate_uri", "auth_type")
               if not conf[GROUP][name]]
    if missing:
        raise KeystoneConfigError(
            f"[{GROUP}] needs {' and '.join(missing)}, as Ironic's "
            f"configuration does")
    LOG.info("%s", probe.settings.describe())
    return lambda app: KeystoneMiddleware(app, conf)
