"""``serve``'s authentication and TLS options, checked before listening.

The decisions are pure (:func:`loopback_only_error`); :func:`configure`
reads the files and returns what the server needs, or raises
:class:`SecurityConfigError` with a message for the operator.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import socket
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

LOG = logging.getLogger(__name__)

NOAUTH = "noauth"
HTTP_BASIC = "http_basic"
KEYSTONE = "keystone"
STRATEGIES = (NOAUTH, HTTP_BASIC, KEYSTONE)
RISK_FLAG = "--allow-unauthenticated-remote-access"
#: Request line plus headers; bigger requests are refused with 431 by the
#: HTTP front end (server/frontend), before the application sees them.
MAX_HEADER_BYTES = 64 * 1024

Resolver = Callable[[str], Sequence[str]]


class SecurityConfigError(Exception):
    """Options that must not (or cannot) be served with."""


def _resolve(host: str) -> Sequence[str]:
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    return [str(info[4][0]) for info in infos]


def is_loopback(host: str, resolve: Resolver = _resolve) -> bool:
    """True when every address ``host`` stands for is a loopback one."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        addresses = resolve(host)
    except OSError:
        return False
    return bool(addresses) and all(
        ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses
    )


def loopback_only_error(
    strategy: str, host: str, allow_remote: bool,
    resolve: Resolver = _resolve,
) -> str | None:
    """Why ``noauth`` may not listen on ``host`` (pure given ``resolve``)."""
    if strategy != NOAUTH or allow_remote or is_loopback(host, resolve):
        return None
    return (
        f"refusing to serve without authentication on {host}, which is "
        f"not a loopback address: use --auth-strategy http_basic, bind "
        f"127.0.0.1, or pass {RISK_FLAG} if anyone who can reach this "
        f"port may control every node"
    )


@dataclass(frozen=True)
class SecuritySetup:
    """What ``serve`` applies: a WSGI wrapper and an optional TLS context."""

    wrap: Callable[[Any], Any]
    tls_context: ssl.SSLContext | None
    scheme: str


def configure(args: argparse.Namespace) -> SecuritySetup:
    """Check the options and load the files they name."""
    error = loopback_only_error(
        args.auth_strategy, args.host,
        args.allow_unauthenticated_remote_access,
    )
    if error:
        raise SecurityConfigError(error)
    wrap = _auth_wrapper(args)
    context = _tls_context(args.tls_cert, args.tls_key)
    if args.auth_strategy != NOAUTH and context is None and (
        not is_loopback(args.host)
    ):
        LOG.warning("%s without TLS on %s: credentials cross the "
                    "network in clear text; use --tls-cert/--tls-key",
                    args.auth_strategy, args.host)
    return SecuritySetup(wrap, context, "https" if context else "http")


def _auth_wrapper(args: argparse.Namespace) -> Callable[[Any], Any]:
    from baremetal_allocclient.server.api import auth

    if args.auth_strategy != HTTP_BASIC and (
        args.htpasswd or args.auth_projects
    ):
        raise SecurityConfigError(
            "--htpasswd and --auth-projects need --auth-strategy http_basic"
        )
    if args.auth_strategy != KEYSTONE and args.keystone_config:
        raise SecurityConfigError(
            "--keystone-config needs --auth-strategy keystone")
    if args.auth_strategy == NOAUTH:
        return lambda app: app
    if args.auth_strategy == KEYSTONE:
        return _keystone_wrapper(args)
    if not args.htpasswd:
        raise SecurityConfigError("--auth-strategy http_basic needs "
                                  "--htpasswd FILE")
    try:
        users = auth.load_htpasswd(args.htpasswd)
        principals = (
            auth.load_projects(args.auth_projects)
            if args.auth_projects else None
        )
    except auth.AuthConfigError as exc:
        raise SecurityConfigError(str(exc)) from exc
    if not users:
        raise SecurityConfigError(f"{args.htpasswd} has no users")
    authenticator = auth.Authenticator(users, principals)
    return lambda app: auth.BasicAuthMiddleware(app, authenticator)


def _keystone_wrapper(args: argparse.Namespace) -> Callable[[Any], Any]:
    """keystonemiddleware's ``auth_token`` configured by the
    ``[keystone_authtoken]`` section of ``--keystone-config``, else of this
    server's own configuration files (and the environment)."""
    from baremetal_allocclient.server.api import keystone

    try:
        conf = (keystone.load_config(args.keystone_config)
                if args.keystone_config else getattr(args, "oslo_conf", None))
        if conf is None:
            raise SecurityConfigError(
                "--auth-strategy keystone needs a [keystone_authtoken] "
                "section (--config-file or --keystone-config FILE)")
        wrap: Callable[[Any], Any] = keystone.wrapper(conf)
    except keystone.KeystoneConfigError as exc:
        raise SecurityConfigError(str(exc)) from exc
    except ImportError as exc:  # keystonemiddleware: the [server] extra
        raise SecurityConfigError(
            f"--auth-strategy keystone needs keystonemiddleware: {exc}"
        ) from exc
    return wrap


def _tls_context(cert: str | None, key: str | None) -> ssl.SSLContext | None:
    """A server-side context with Python's defaults (TLS 1.2 or later)."""
    if not cert and not key:
        return None
    if not (cert and key):
        raise SecurityConfigError("--tls-cert and --tls-key go together")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert, key)
        return context
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise SecurityConfigError(
            f"cannot load TLS certificate {cert} / key {key}: {exc}"
        ) from exc
