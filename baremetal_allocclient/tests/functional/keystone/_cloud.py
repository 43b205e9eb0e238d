"""A small cloud: a real Keystone, two projects, and the reference server
registered as its ``baremetal`` endpoint, served with
``--auth-strategy keystone``.

Users (random passwords per run): ``admin`` (system admin, from
bootstrap), ``alice`` (member of project A), ``bob`` (member of project
B), ``rita`` (reader of project A) and the service user ``baremetal``
(``service`` role in project ``service``) that validates tokens.
"""

from __future__ import annotations

import os
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

from baremetal_allocclient.tests.fixtures.processes import free_port
from baremetal_allocclient.tests.functional.keystone import _keystone
from baremetal_allocclient.tests.functional.security import _support as sup

ADMIN, ALICE, BOB, RITA, SERVICE = "admin", "alice", "bob", "rita", \
    "baremetal"
PASSWORD_ENV = "OS_KEYSTONE_AUTHTOKEN__PASSWORD"


@dataclass(frozen=True)
class User:
    """A Keystone user and the project its token is scoped to."""

    name: str
    password: str
    project: str | None  # project name; None: system scope

    def auth(self, url: str) -> v3.Password:
        """A keystoneauth password plugin for this user."""
        scope: dict[str, Any] = (
            {"system_scope": "all"} if self.project is None else
            {"project_name": self.project, "project_domain_id": "default"})
        return v3.Password(auth_url=url, username=self.name,
                           password=self.password, user_domain_id="default",
                           **scope)


class Server(sup.SecureServer):
    """The reference server; requests carry a user's Keystone token.

    ``auth`` is a user name (default: the system admin), or False for no
    token at all.
    """

    def __init__(self, tokens: Callable[[str], str],
                 db_url: str | None = None) -> None:
        super().__init__(db_url)
        self._tokens = tokens

    def request(  # type: ignore[override]
        self, method: str, path: str, json: Any = None, *,
        auth: str | bool | None = None, version: str = "latest",
        **kwargs: Any,
    ) -> requests.Response:
        headers = dict(kwargs.pop("headers", None) or {})
        if auth is not False:
            user = auth if isinstance(auth, str) else ADMIN
            headers.setdefault("X-Auth-Token", self._tokens(user))
        return super().request(method, path, json, auth=False,
                               version=version, headers=headers, **kwargs)


class Cloud:
    """Keystone + reference server; ``close`` stops both."""

    def __init__(self, hash_rounds: int | None = None,
                 serve_args: tuple[str, ...] = (),
                 keystone_threads: int = 4) -> None:
        """``hash_rounds``: Keystone's bcrypt cost (its default when
        None); ``serve_args``: more ``serve`` options for every server;
        ``keystone_threads``: Keystone's request threads."""
        self.serve_args = serve_args
        self.project_a = "proj-a-" + uuid.uuid4().hex[:6]
        self.project_b = "proj-b-" + uuid.uuid4().hex[:6]
        self.users = {
            name: User(name, f"pw-{name}-{secrets.token_hex(8)}", project)
            for name, project in (
                (ADMIN, None), (ALICE, self.project_a),
                (BOB, self.project_b), (RITA, self.project_a),
                (SERVICE, "service"))
        }
        self._sessions: dict[str, ks_session.Session] = {}
        self._endpoints: list[str] = []
        self._roles: dict[str, str] = {}
        self.keystone = _keystone.Keystone(self.users[ADMIN].password,
                                           hash_rounds, keystone_threads)
        self.server = Server(self.token)
        try:
            self.project_ids = self._provision()
            self._serve()
        except BaseException:
            self.close()
            raise

    # -- Keystone ------------------------------------------------------------
    def new_session(self, user: str) -> ks_session.Session:
        """A new keystoneauth session authenticated as ``user``."""
        return ks_session.Session(auth=self.users[user].auth(
            self.keystone.url))

    def session(self, user: str) -> ks_session.Session:
        """A keystoneauth session of ``user``, kept (one token)."""
        if user not in self._sessions:
            self._sessions[user] = self.new_session(user)
        return self._sessions[user]

    def _post(self, admin: ks_session.Session, path: str,
              body: dict[str, Any]) -> Any:
        response = admin.post(self.keystone.url + path, json=body)
        return response.json()

    def _provision(self) -> dict[str, str]:
        admin = self.session(ADMIN)
        self._roles = {r["name"]: r["id"] for r in admin.get(
            self.keystone.url + "/roles").json()["roles"]}
        projects = {name: self.add_project(name) for name in (
            "service", self.project_a, self.project_b)}
        for user, role in ((ALICE, "member"), (BOB, "member"),
                           (RITA, "reader"), (SERVICE, "service")):
            entry = self.users[user]
            self.add_user(entry, projects[str(entry.project)], role)
        return projects

    def add_project(self, name: str) -> str:
        """A new project in the default domain; its ID."""
        return str(self._post(self.session(ADMIN), "/projects", {
            "project": {"name": name, "domain_id": "default"},
        })["project"]["id"])

    def add_user(self, user: User, project_id: str, role: str) -> str:
        """Create ``user`` with ``role`` on the project; the user's ID
        (``user.project`` must be that project's name)."""
        admin = self.session(ADMIN)
        user_id = str(self._post(admin, "/users", {"user": {
            "name": user.name, "password": user.password,
            "domain_id": "default"}})["user"]["id"])
        admin.put(f"{self.keystone.url}/projects/{project_id}/users/"
                  f"{user_id}/roles/{self._roles[role]}")
        self.users[user.name] = user
        return user_id

    def register_endpoint(self, url: str) -> None:
        """The reference server as the catalog's ``baremetal`` service."""
        admin = self.session(ADMIN)
        service = self._post(admin, "/services", {"service": {
            "type": "baremetal", "name": "ironic"}})["service"]["id"]
        self._endpoints = [
            self._post(admin, "/endpoints", {"endpoint": {
                "service_id": service, "interface": interface, "url": url,
                "region_id": _keystone.REGION}})["endpoint"]["id"]
            for interface in ("public", "internal", "admin")]

    def point_endpoint(self, url: str) -> None:
        """The catalog's ``baremetal`` endpoints now name ``url`` (for
        tokens issued from now on)."""
        admin = self.session(ADMIN)
        for endpoint in self._endpoints:
            admin.patch(f"{self.keystone.url}/endpoints/{endpoint}",
                        json={"endpoint": {"url": url}})

    # -- the reference server ------------------------------------------------
    def keystone_config(self, directory: str, extra: str = "") -> str:
        """Ironic's ``[keystone_authtoken]`` as the docs show it (without
        the password; this server's defaults for the rest), plus
        ``extra`` lines."""
        path = os.path.join(directory, "baremetal-alloc.conf")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(
                "[keystone_authtoken]\n"
                f"www_authenticate_uri = {self.keystone.url}\n"
                f"auth_url = {self.keystone.url}\n"
                "auth_type = password\n"
                f"username = {SERVICE}\n"
                "user_domain_name = Default\n"
                "project_name = service\n"
                "project_domain_name = Default\n"
                f"region_name = {_keystone.REGION}\n" + extra)
        return path

    def _serve(self) -> None:
        port = free_port()
        self.register_endpoint(f"http://127.0.0.1:{port}")
        self.start_server(self.server, port=port)

    def start_server(self, server: Server, extra: str = "",
                     port: int | None = None) -> None:
        """Serve with ``--auth-strategy keystone`` and this Keystone."""
        server.start(
            *self.serve_args, "--auth-strategy", "keystone",
            "--keystone-config", self.keystone_config(server.tmpdir, extra),
            env={PASSWORD_ENV: self.users[SERVICE].password}, port=port)

    def another_server(self, extra: str = "",
                       db_url: str | None = None) -> Server:
        """A second server (its own database, ``db_url`` or a SQLite file,
        outside the catalog) whose ``[keystone_authtoken]`` adds
        ``extra``; stopped by the caller."""
        server = Server(self.token, db_url)
        try:
            self.start_server(server, extra)
        except BaseException:
            server.cleanup()
            raise
        return server

    def ironic_keystone(self) -> str:
        """A real Ironic's ``[keystone_authtoken]`` (the service user,
        its password included) and ``[oslo_policy]`` (scope enforced)
        for this Keystone: :class:`targets.Ironic`'s ``keystone``."""
        service = self.users[SERVICE]
        return (
            "[keystone_authtoken]\n"
            f"www_authenticate_uri = {self.keystone.url}\n"
            f"auth_url = {self.keystone.url}\n"
            "auth_type = password\n"
            f"username = {service.name}\n"
            f"password = {service.password}\n"
            "user_domain_name = Default\n"
            "project_name = service\n"
            "project_domain_name = Default\n"
            f"region_name = {_keystone.REGION}\n"
            "[oslo_policy]\n"
            "enforce_scope = true\n"
            "enforce_new_defaults = true\n")

    def token(self, user: str) -> str:
        """A token of ``user`` in its scope (cached by the session)."""
        token = self.session(user).get_token()
        assert token, user
        return str(token)

    def headers(self, user: str) -> dict[str, str]:
        """Request headers authenticating as ``user``."""
        return {"X-Auth-Token": self.token(user)}

    def close(self) -> None:
        """Stop the server and Keystone; remove their files."""
        self.server.cleanup()
        self.keystone.close()
