"""HTTP basic authentication against an Apache htpasswd file.

Behaves like Ironic's ``http_basic`` strategy, so keystoneauth1's
``http_basic`` plugin (our SDK and CLI, python-ironicclient, openstacksdk)
authenticates unchanged: bcrypt entries only, the discovery documents stay
public, a missing or wrong credential is a 401 with
``WWW-Authenticate: Basic realm="Baremetal API"``.

Who the authenticated user is (admin, or member of one project) comes from a
separate mapping file: :func:`load_projects`,
``doc/source/howto/security.rst``.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import hmac
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import bcrypt
import yaml

from baremetal_allocclient.server.domain.principal import (
    NOAUTH_ADMIN,
    Principal,
)

LOG = logging.getLogger(__name__)

#: WSGI environ key holding the request's :class:`Principal`.
ENVIRON_KEY = "baremetal_alloc.principal"
REALM = 'Basic realm="Baremetal API"'
ADMIN = "admin"
MEMBER = "member"
ROLES = (ADMIN, MEMBER)
#: Paths answered without credentials: version discovery (as in Ironic's
#: ``acl_public_routes``) and the API description.
PUBLIC_PATHS = ("/", "/v1", "/v1/openapi.json")
_BCRYPT_PREFIXES = (b"$2y$", b"$2a$", b"$2b$")
_USER_MAX = 255
_PASSWORD_MAX = 4096


class AuthConfigError(Exception):
    """An htpasswd or project mapping file that cannot be used."""


def principal_of(environ: Mapping[str, Any]) -> Principal:
    """The request's principal; absent only under ``noauth`` (admin)."""
    found = environ.get(ENVIRON_KEY)
    return found if isinstance(found, Principal) else NOAUTH_ADMIN


# -- files -------------------------------------------------------------------

def parse_htpasswd(text: str, source: str = "htpasswd") -> dict[str, bytes]:
    """``user:bcrypt-hash`` lines; blank lines and ``#`` comments skipped."""
    users: dict[str, bytes] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, digest = line.partition(":")
        if not sep or not user:
            raise AuthConfigError(
                f"{source}:{number}: expected 'user:hash'"
            )
        encoded = digest.strip().encode("utf-8")
        if encoded[:4] not in _BCRYPT_PREFIXES:
            raise AuthConfigError(
                f"{source}:{number}: only bcrypt hashes are supported for "
                f"user {user!r} (create them with 'htpasswd -B')"
            )
        users[user] = encoded
    return users


def parse_projects(data: object, source: str = "projects") -> dict[
    str, Principal
]:
    """The user mapping: ``{"users": {name: {"project": p, "roles": [..]}}}``.

    ``admin`` needs no project; ``member`` requires one.
    """
    if not isinstance(data, dict) or not isinstance(data.get("users"), dict):
        raise AuthConfigError(
            f"{source}: expected a mapping with a 'users' mapping"
        )
    unknown = set(data) - {"users"}
    if unknown:
        raise AuthConfigError(
            f"{source}: unknown top-level keys {sorted(unknown)}"
        )
    result: dict[str, Principal] = {}
    for user, entry in data["users"].items():
        if not isinstance(entry, dict) or set(entry) - {"project", "roles"}:
            raise AuthConfigError(
                f"{source}: user {user!r}: expected keys 'project' and "
                f"'roles'"
            )
        roles = entry.get("roles")
        if (
            not isinstance(roles, list)
            or not roles
            or not all(role in ROLES for role in roles)
        ):
            raise AuthConfigError(
                f"{source}: user {user!r}: 'roles' must be a non-empty "
                f"list of {', '.join(ROLES)}"
            )
        project = entry.get("project")
        if project is not None and (
            not isinstance(project, str) or not project
        ):
            raise AuthConfigError(
                f"{source}: user {user!r}: 'project' must be a non-empty "
                f"string"
            )
        admin = ADMIN in roles
        if not admin and project is None:
            raise AuthConfigError(
                f"{source}: user {user!r}: a member needs a 'project'"
            )
        result[str(user)] = Principal(str(user), project, admin)
    return result


def load_htpasswd(path: str) -> dict[str, bytes]:
    """Read and check an htpasswd file."""
    try:
        with open(path, encoding="utf-8") as stream:
            return parse_htpasswd(stream.read(), path)
    except (OSError, UnicodeDecodeError) as exc:
        raise AuthConfigError(f"cannot read {path}: {exc}") from exc


def load_projects(path: str) -> dict[str, Principal]:
    """Read a YAML (or JSON, a subset of YAML) user mapping file."""
    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
        data = (
            json.loads(text) if path.endswith(".json") else
            yaml.safe_load(text)
        )
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        raise AuthConfigError(f"cannot read {path}: {exc}") from exc
    return parse_projects(data, path)


# -- checking credentials ----------------------------------------------------

class Authenticator:
    """Checks basic credentials; remembers recent successes (bcrypt is slow).

    The cache holds keyed digests of ``user:password``, never passwords, and
    its key is random per process.  Unknown users cost one bcrypt check too,
    so timing does not tell which user names exist.
    """

    def __init__(
        self,
        users: Mapping[str, bytes],
        principals: Mapping[str, Principal] | None,
    ) -> None:
        self._users = dict(users)
        self._principals = None if principals is None else dict(principals)
        self._key = os.urandom(32)
        self._good: set[bytes] = set()
        self._lock = threading.Lock()
        self._dummy = bcrypt.hashpw(b"unused", bcrypt.gensalt(rounds=4))

    def principal(self, user: str) -> Principal | None:
        """The role of an authenticated user; None when it has none.

        Without a mapping file every user is an admin (Ironic standalone).
        """
        if self._principals is None:
            return Principal(user, None, True)
        return self._principals.get(user)

    def check(self, user: str, password: bytes) -> bool:
        """True when the password matches the user's bcrypt hash."""
        digest = hmac.new(
            self._key, user.encode("utf-8") + b"\0" + password,
            hashlib.sha256,
        ).digest()
        with self._lock:
            if digest in self._good:
                return True
        hashed = self._users.get(user)
        if hashed is None:
            bcrypt.checkpw(password, self._dummy)
            return False
        try:
            ok = bcrypt.checkpw(password, hashed)
        except ValueError:
            ok = False
        if ok:
            with self._lock:
                if len(self._good) > 1024:
                    self._good.clear()
                self._good.add(digest)
        return ok


def parse_authorization(header: str | None) -> tuple[str, bytes]:
    """User and password from a ``Basic`` header; :class:`Rejected` if not."""
    if header is None:
        raise Rejected(401, "Authorization required")
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic" or not token.strip():
        raise Rejected(400, "Unsupported or malformed Authorization header; "
                            "use HTTP basic authentication")
    try:
        pair = base64.b64decode(token.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise Rejected(400, "Could not decode the authorization token") \
            from None
    user_bytes, sep, password = pair.partition(b":")
    try:
        user = user_bytes.decode("utf-8")
    except UnicodeDecodeError:
        raise Rejected(400, "The user name is not valid UTF-8") from None
    if not sep or not user or len(user) > _USER_MAX or (
        len(password) > _PASSWORD_MAX
    ):
        raise Rejected(401, "Incorrect username or password")
    return user, password


class Rejected(Exception):
    """A request refused before it reaches the application."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


# -- the middleware ----------------------------------------------------------

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

_REASONS = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden"}


def named_node(path: str) -> str | None:
    """The node a ``/v1/nodes/<ident>[/...]`` path names (pure)."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 3 and parts[:2] == ["v1", "nodes"] and \
            parts[2] != "detail":
        return parts[2]
    return None


def refuse(principal: Principal, message: str, path: str) -> Principal:
    """A role refusal (403): at once, or, for a request that names a
    node, left to the application, which finds the node first (Ironic's
    order: 404 for a node the caller cannot see)."""
    if named_node(path) is None:
        raise Rejected(403, message)
    return dataclasses.replace(principal, refused=message)


def member_may(method: str, path: str) -> bool:
    """Which routes a project member may call at all (pure).

    Members read nodes and their ports (of nodes they own or lease; the
    handlers hide others) and use the allocation API; every other node or
    port change, the shard list (which counts every node) and chassis
    (system-scoped only in Ironic) are admin-only.
    """
    parts = [p for p in path.split("/") if p]
    if parts[:2] in (["v1", "shards"], ["v1", "chassis"]):
        return False
    if parts[:2] == ["v1", "ports"]:
        return method in ("GET", "HEAD")
    if parts[:2] != ["v1", "nodes"]:
        return True
    if method in ("GET", "HEAD"):
        return True
    return method == "DELETE" and len(parts) == 4 and parts[3] == "allocation"


class BasicAuthMiddleware:
    """Authenticates every non-public request before the application."""

    def __init__(self, app: WsgiApp, authenticator: Authenticator) -> None:
        self._app = app
        self._auth = authenticator

    def __call__(
        self, environ: dict[str, Any], start_response: StartResponse
    ) -> Iterable[bytes]:
        # Never hand the credentials further down (handlers, logs).
        header = environ.pop("HTTP_AUTHORIZATION", None)
        path = (environ.get("PATH_INFO") or "/").rstrip("/") or "/"
        if path in PUBLIC_PATHS:
            return self._app(environ, start_response)
        try:
            user, password = parse_authorization(header)
            if not self._auth.check(user, password):
                LOG.info("Rejected credentials for user %r", user[:64])
                raise Rejected(401, "Incorrect username or password")
            principal = self._auth.principal(user)
            if principal is None:
                raise Rejected(403, f"User {user} has no role on this "
                                    f"service")
            method = str(environ.get("REQUEST_METHOD", "GET")).upper()
            if not principal.admin and not member_may(method, path):
                principal = refuse(principal,
                                   "Only an admin may change nodes", path)
        except Rejected as exc:
            return reject(exc, environ, start_response)
        environ[ENVIRON_KEY] = principal
        environ["REMOTE_USER"] = user
        return self._app(environ, start_response)


def reject(
    exc: Rejected, environ: dict[str, Any], start_response: StartResponse,
    realm: str | None = REALM,
) -> Iterable[bytes]:
    """Ironic's shape for auth failures: ``{"error": {message, code}}``.

    A 401 names ``realm`` in ``WWW-Authenticate`` (none: no header).
    """
    LOG.info("%s %s -> %d (%s)", environ.get("REQUEST_METHOD"),
             environ.get("PATH_INFO"), exc.status, exc.message)
    body = json.dumps(
        {"error": {"message": exc.message, "code": exc.status}}
    ).encode("utf-8")
    headers = [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(body))),
    ]
    if exc.status == 401 and realm is not None:
        headers.append(("WWW-Authenticate", realm))
    start_response(f"{exc.status} {_REASONS[exc.status]}", headers)
    return [body]
