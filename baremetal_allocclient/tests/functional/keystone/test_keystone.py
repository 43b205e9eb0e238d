"""``serve --auth-strategy keystone`` against a real Keystone.

One Keystone and one reference server per class (set-up about 25 s): the
server is the catalog's ``baremetal`` endpoint and the clients find it
there.  alice (member) and rita (reader) are in project A, bob (member) in
project B, admin holds the system-scoped admin role.

The server runs with the ``[keystone_authtoken]`` the docs show, so
keystonemiddleware's edges are tested with this server's defaults for them
(``security.rst``): validated tokens cached :data:`CACHE_SECONDS`, no
expired token revived by an ``X-Service-Token``, access rules checked for
the ``baremetal`` service.  The cache test waits that long (about 31 s).
"""

from __future__ import annotations

import datetime
import json
import subprocess
import time
import uuid
from typing import Any

import testtools
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

from baremetal_allocclient import exceptions, leases
from baremetal_allocclient.tests.fixtures.processes import StartError
from baremetal_allocclient.tests.functional.keystone import _cloud, _keystone
from baremetal_allocclient.tests.functional.keystone._cloud import (
    ADMIN,
    ALICE,
    BOB,
    RITA,
    SERVICE,
)
from baremetal_allocclient.tests.functional.security import _support as sup
from baremetal_allocclient.v1 import Client

#: The server's default ``[keystone_authtoken] token_cache_time``.
CACHE_SECONDS = 30
#: Lifetime of the tokens that must really expire during a test.
SHORT_LIFE = 2

_UNAUTHORIZED = {"error": {
    "code": 401, "title": "Unauthorized",
    "message": "The request you have made requires authentication."}}


def _uuids(listed: list[dict[str, Any]]) -> list[str]:
    """The UUID column of a CLI list in JSON (its header's case varies)."""
    return [v for row in listed for k, v in row.items() if k.lower() == "uuid"]


class KeystoneTests(testtools.TestCase):
    """Two projects on one server, through Keystone's catalog."""

    cloud: _cloud.Cloud
    rc: str
    a_nodes: list[Any]
    b_nodes: list[Any]
    leased: Any
    revives: _cloud.Server | None = None

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        try:
            _keystone.ensure_keystone_venv()
        except (StartError, OSError, subprocess.TimeoutExpired) as exc:
            raise cls.skipException(
                f"Keystone could not be installed from PyPI: {exc}") from exc
        cls.cloud = _cloud.Cloud()
        cls.addClassCleanup(cls.cloud.close)
        cls.rc = "rc-" + uuid.uuid4().hex[:8]
        server = cls.cloud.server
        cls.a_nodes = server.make_nodes(
            3, cls.rc, owner=cls.cloud.project_ids[cls.cloud.project_a])
        cls.b_nodes = server.make_nodes(
            3, cls.rc, owner=cls.cloud.project_ids[cls.cloud.project_b])
        # B's node leased to A: A sees and may allocate it, as in Ironic.
        cls.leased = server.make_nodes(
            1, cls.rc, owner=cls.cloud.project_ids[cls.cloud.project_b],
            lessee=cls.cloud.project_ids[cls.cloud.project_a])[0]

    def a_visible(self) -> set[str]:
        """Project A's nodes: owned or leased."""
        return {n["uuid"] for n in self.a_nodes} | {self.leased["uuid"]}

    @property
    def server(self) -> _cloud.Server:
        return self.cloud.server

    def project_id(self, user: str) -> str:
        project = self.cloud.users[user].project
        assert project is not None
        return self.cloud.project_ids[project]

    def sdk(self, user: str, plugin: Any = None) -> Client:
        """The SDK on a session (password of ``user`` unless another
        keystoneauth ``plugin``); the endpoint from the catalog."""
        session = (self.cloud.new_session(user) if plugin is None else
                   ks_session.Session(auth=plugin))
        client = Client.from_session(session, interface="public",
                                     region_name=_keystone.REGION)
        self.addCleanup(client.close)
        return client

    def cli_env(self, user: str, **extra: str) -> dict[str, str]:
        """OS_* variables for password auth of ``user`` (no endpoint)."""
        entry = self.cloud.users[user]
        env = {
            "OS_AUTH_URL": self.cloud.keystone.url,
            "OS_IDENTITY_API_VERSION": "3",
            "OS_USERNAME": user, "OS_PASSWORD": entry.password,
            "OS_USER_DOMAIN_NAME": "Default",
            "OS_PROJECT_NAME": str(entry.project),
            "OS_PROJECT_DOMAIN_NAME": "Default",
            "OS_REGION_NAME": _keystone.REGION,
            "OS_INTERFACE": "public",
        }
        env.update(extra)
        return env

    def run_cli(self, name: str, args: list[str], env: dict[str, str],
                ok: bool = True) -> Any:
        result = sup.command(name, args, env=env)
        if ok and result.returncode != 0:
            self.fail(f"{name} {args} exited {result.returncode}:\n"
                      f"{result.stderr[-3000:]}")
        return result

    # -- the HTTP contract ---------------------------------------------------

    def test_no_or_bad_token_is_keystonemiddleware_401(self) -> None:
        for headers in ({}, {"X-Auth-Token": "not-a-token"},
                        {"X-Auth-Token": self.cloud.token(ALICE)[:-4]}):
            for method, path in (("GET", "/v1/allocations"),
                                 ("GET", "/v1/nodes"),
                                 ("POST", "/v1/allocations")):
                response = self.server.request(
                    method, path, {} if method == "POST" else None,
                    auth=False, headers=headers)
                self.assertEqual(401, response.status_code, response.text)
                self.assertEqual(_UNAUTHORIZED, response.json())
                self.assertEqual(
                    f'Keystone uri="{self.cloud.keystone.url}"',
                    response.headers["WWW-Authenticate"])

    def test_no_token_or_password_in_the_server_log(self) -> None:
        token = self.cloud.token(ALICE)
        self.server.expect(200, "GET", "/v1/allocations", auth=ALICE)
        self.server.request("GET", "/v1/nodes", auth=False,
                            headers={"X-Auth-Token": token[:-4]})
        log = self.server.log()
        self.assertIn("user=alice", log)
        for secret in (token, token[:-4],
                       self.cloud.users[_cloud.SERVICE].password):
            self.assertNotIn(secret, log)

    def test_discovery_stays_public(self) -> None:
        for path in ("/", "/v1"):
            response = self.server.request("GET", path, auth=False)
            self.assertEqual(200, response.status_code, response.text)

    def test_identity_headers_from_the_client_are_ignored(self) -> None:
        theirs = self._allocate(BOB)
        forged = {"X-Roles": "admin", "X-Project-Id": self.project_id(BOB),
                  "OpenStack-System-Scope": "all",
                  "X-Identity-Status": "Confirmed"}
        self.server.expect(404, "GET", f"/v1/allocations/{theirs['uuid']}",
                           auth=ALICE, headers=forged)
        self.assertEqual(401, self.server.request(
            "GET", "/v1/allocations", auth=False,
            headers=forged).status_code)

    def test_reader_reads_its_project_and_changes_nothing(self) -> None:
        mine = self._allocate(ALICE)
        listed = self.server.expect(200, "GET", "/v1/allocations",
                                    auth=RITA)["allocations"]
        self.assertIn(mine["uuid"], [a["uuid"] for a in listed])
        self.assertEqual({self.project_id(ALICE)},
                         {a["owner"] for a in listed})
        for method, path, body in (
                ("POST", "/v1/allocations", {"resource_class": self.rc}),
                ("DELETE", f"/v1/allocations/{mine['uuid']}", None),
                ("PATCH", f"/v1/allocations/{mine['uuid']}",
                 [{"op": "add", "path": "/extra/x", "value": "y"}])):
            response = self.server.request(method, path, body, auth=RITA)
            self.assertEqual(403, response.status_code, response.text)
        self.server.expect(200, "GET", f"/v1/allocations/{mine['uuid']}",
                           auth=ALICE)

    def test_system_admin_sees_every_project(self) -> None:
        mine, theirs = self._allocate(ALICE), self._allocate(BOB)
        listed = {a["uuid"] for a in self.server.expect(
            200, "GET", "/v1/allocations")["allocations"]}
        self.assertTrue({mine["uuid"], theirs["uuid"]} <= listed)

    # -- isolation through the SDK -------------------------------------------

    def _allocate(self, user: str, **fields: Any) -> Any:
        created = self.server.expect(
            201, "POST", "/v1/allocations",
            {"resource_class": self.rc, **fields}, auth=user)
        self.addCleanup(self.server.request, "DELETE",
                        f"/v1/allocations/{created['uuid']}")
        return self._settled(created["uuid"], user)

    def _settled(self, ident: str, user: str) -> Any:
        for _ in range(300):
            body = self.server.expect(200, "GET", f"/v1/allocations/{ident}",
                                      auth=user)
            if body["state"] != "allocating":
                self.assertEqual("active", body["state"], body)
                return body
            self.server.request("GET", "/", auth=False)
        self.fail(f"allocation {ident} still allocating")

    def test_sdk_member_creates_in_its_project_from_the_catalog(self) -> None:
        alice = self.sdk(ALICE)
        self.assertEqual(self.server.endpoint,
                         alice.endpoint.rstrip("/").removesuffix("/v1"))
        allocation = alice.allocate(self.rc, timeout=60)
        self.addCleanup(self.server.request, "DELETE",
                        f"/v1/allocations/{allocation.uuid}")
        self.assertEqual(self.project_id(ALICE), allocation.owner)
        self.assertIn(allocation.node_uuid, self.a_visible())

    def test_allocations_of_another_project_do_not_exist(self) -> None:
        theirs = self._allocate(BOB, name="bob-" + uuid.uuid4().hex[:6])
        alice = self.sdk(ALICE)
        self.assertNotIn(theirs["uuid"],
                         [a.uuid for a in alice.list_allocations()])
        self.assertRaises(exceptions.Forbidden, list, alice.list_allocations(
            owner=self.project_id(BOB)))
        for ident in (theirs["uuid"], theirs["name"]):
            self.assertRaises(exceptions.NotFound, alice.get_allocation,
                              ident)
            self.assertRaises(exceptions.NotFound, alice.update_allocation,
                              ident, set_extra={"x": "y"})
            self.assertRaises(exceptions.NotFound, alice.delete_allocation,
                              ident)
        after = self.sdk(BOB).get_allocation(theirs["uuid"])
        self.assertEqual(("active", {}), (after.state, after.extra))

    def test_nodes_of_another_project_do_not_exist(self) -> None:
        alice = self.sdk(ALICE)
        for node in self.b_nodes:
            self.assertRaises(exceptions.NotFound, alice.get_node,
                              node["uuid"])
        listed = self.server.expect(
            200, "GET", f"/v1/nodes?resource_class={self.rc}",
            auth=ALICE)["nodes"]
        self.assertEqual(self.a_visible(), {n["uuid"] for n in listed})
        self.assertEqual(self.leased["uuid"], alice.get_node(
            self.leased["uuid"]).uuid)
        node = self.b_nodes[0]["uuid"]
        # A change of a node it cannot see: 404, as Ironic (the node is
        # looked up before the role is checked); of its own: 403.
        self.server.expect(404, "PATCH", f"/v1/nodes/{node}", [
            {"op": "add", "path": "/extra/x", "value": "y"}], auth=ALICE)
        self.server.expect(404, "DELETE", f"/v1/nodes/{node}", auth=ALICE)
        self.server.expect(404, "PUT", f"/v1/nodes/{node}/states/power",
                           {"target": "power off"}, auth=ALICE)
        own = self.a_nodes[0]["uuid"]
        self.server.expect(403, "PATCH", f"/v1/nodes/{own}", [
            {"op": "add", "path": "/extra/x", "value": "y"}], auth=ALICE)
        self.server.expect(403, "DELETE", f"/v1/nodes/{own}", auth=ALICE)
        self.assertNotIn("x", self.server.expect(
            200, "GET", f"/v1/nodes/{own}", auth=_cloud.ADMIN)["extra"])
        self.server.expect(
            400, "POST", "/v1/allocations",
            {"resource_class": self.rc, "candidate_nodes": [node]},
            auth=ALICE)

    def test_capacity_and_explain_count_only_own_nodes(self) -> None:
        alice, admin = self.sdk(ALICE), self.sdk(_cloud.ADMIN)
        mine = alice.get_allocation_capacity(self.rc)
        everything = admin.get_allocation_capacity(self.rc)
        self.assertEqual([len(self.a_visible())], [r["total"] for r in mine])
        self.assertEqual([len(self.a_nodes) + len(self.b_nodes) + 1],
                         [r["total"] for r in everything])
        explained = alice.explain(self.rc)
        text = json.dumps(explained)
        for node in self.b_nodes:
            self.assertNotIn(node["uuid"], text)
        self.assertEqual(len(self.a_visible()),
                         explained["funnel"][0]["count"], text)
        self.assertRaises(
            exceptions.BadRequest, alice.explain, self.rc,
            candidate_nodes=[self.b_nodes[0]["uuid"]])

    def test_groups_and_leases_of_another_project(self) -> None:
        bob, alice = self.sdk(BOB), self.sdk(ALICE)
        group = "g-" + uuid.uuid4().hex[:6]
        members = bob.allocate_group(2, self.rc, name=group, timeout=60,
                                     lease=datetime.timedelta(hours=1))
        for member in members:
            self.addCleanup(self.server.request, "DELETE",
                            f"/v1/allocations/{member.uuid}")
        self.assertEqual([], alice.list_group(group))
        self.assertEqual([], alice.renew_group(group,
                                               datetime.timedelta(hours=5)))
        self.assertEqual([], alice.release_group(group))
        self.assertRaises(exceptions.NotFound, alice.renew_lease,
                          members[0].uuid, datetime.timedelta(hours=5))
        # bob's leases are already over: alice's expiry must not see them.
        past = leases.format_timestamp(
            datetime.datetime.now(datetime.timezone.utc)
            - datetime.timedelta(minutes=5))
        for member in members:
            bob.update_allocation(str(member.uuid),
                                  set_extra={leases.EXPIRES_KEY: past})
        self.assertEqual([], alice.expire().entries)
        self.assertEqual({m.uuid for m in members}, {
            e.allocation.uuid for e in bob.expire(dry_run=True).entries})
        self.assertEqual({m.uuid for m in members},
                         {a.uuid for a in bob.list_group(group)})

    # -- the CLIs ------------------------------------------------------------

    def test_baremetal_alloc_with_password(self) -> None:
        env = self.cli_env(ALICE)
        created = json.loads(self.run_cli("baremetal-alloc", [
            "create", "--resource-class", self.rc, "--wait", "60",
            "-f", "json"], env).stdout)
        self.addCleanup(self.server.request, "DELETE",
                        f"/v1/allocations/{created['uuid']}")
        self.assertEqual(self.project_id(ALICE), created["owner"])
        listed = json.loads(self.run_cli(
            "baremetal-alloc", ["list", "-f", "json"],
            self.cli_env(BOB)).stdout)
        self.assertNotIn(created["uuid"], _uuids(listed))
        shown = self.run_cli("baremetal-alloc", ["show", created["uuid"]],
                             self.cli_env(BOB), ok=False)
        self.assertNotEqual(0, shown.returncode)
        self.run_cli("baremetal-alloc", ["delete", created["uuid"]], env)

    def test_token_auth_and_openstack_with_password(self) -> None:
        mine = self._allocate(ALICE)
        listed = json.loads(self.run_cli("openstack", [
            "baremetal", "allocation", "list", "-f", "json"],
            self.cli_env(ALICE)).stdout)
        self.assertIn(mine["uuid"], _uuids(listed))
        token_env = {
            "OS_AUTH_URL": self.cloud.keystone.url, "OS_AUTH_TYPE": "token",
            "OS_TOKEN": self.cloud.token(BOB),
            "OS_PROJECT_ID": self.project_id(BOB),
            "OS_IDENTITY_API_VERSION": "3",
            "OS_REGION_NAME": _keystone.REGION}
        bob = self.sdk(BOB, v3.Token(
            auth_url=self.cloud.keystone.url, token=token_env["OS_TOKEN"],
            project_id=self.project_id(BOB)))
        self.assertRaises(exceptions.NotFound, bob.get_allocation,
                          mine["uuid"])
        for command in ("openstack", "baremetal-alloc"):
            prefix = (["baremetal", "allocation"] if command == "openstack"
                      else [])
            listed = json.loads(self.run_cli(
                command, [*prefix, "list", "-f", "json"], token_env).stdout)
            self.assertNotIn(mine["uuid"], _uuids(listed))

    def test_application_credential(self) -> None:
        user_id = self.cloud.session(ALICE).get_user_id()
        secret = "ac-" + uuid.uuid4().hex
        created = self.cloud.session(ALICE).post(
            f"{self.cloud.keystone.url}/users/{user_id}/"
            "application_credentials",
            json={"application_credential": {
                "name": "ac-" + uuid.uuid4().hex[:6], "secret": secret}},
        ).json()["application_credential"]
        env = {"OS_AUTH_URL": self.cloud.keystone.url,
               "OS_AUTH_TYPE": "v3applicationcredential",
               "OS_APPLICATION_CREDENTIAL_ID": created["id"],
               "OS_APPLICATION_CREDENTIAL_SECRET": secret,
               "OS_IDENTITY_API_VERSION": "3",
               "OS_REGION_NAME": _keystone.REGION}
        made = json.loads(self.run_cli("baremetal-alloc", [
            "create", "--resource-class", self.rc, "--wait", "60",
            "-f", "json"], env).stdout)
        self.addCleanup(self.server.request, "DELETE",
                        f"/v1/allocations/{made['uuid']}")
        self.assertEqual(self.project_id(ALICE), made["owner"])
        listed = json.loads(self.run_cli("openstack", [
            "baremetal", "allocation", "list", "-f", "json"], env).stdout)
        self.assertIn(made["uuid"], _uuids(listed))
        sdk = self.sdk(ALICE, v3.ApplicationCredential(
            auth_url=self.cloud.keystone.url,
            application_credential_id=created["id"],
            application_credential_secret=secret))
        self.assertEqual(self.project_id(ALICE),
                         sdk.get_allocation(made["uuid"]).owner)

    def test_wrong_credentials_give_one_clear_line(self) -> None:
        env = self.cli_env(ALICE, OS_PASSWORD="wrong-password")
        for command, args in (
                ("baremetal-alloc", ["list"]),
                ("openstack", ["baremetal", "allocation", "list"])):
            result = self.run_cli(command, args, env, ok=False)
            self.assertNotEqual(0, result.returncode)
            lines = result.stderr.strip().splitlines()
            self.assertEqual(1, len(lines), result.stderr)
            self.assertNotIn("Traceback", result.stderr)
            self.assertIn("401", lines[0])
            self.assertNotIn("wrong-password", result.stderr)


    # -- keystonemiddleware's edges, with this server's defaults -------------

    def _answer(self, token: str, server: _cloud.Server | None = None,
                service: str | None = None) -> int:
        """The status of ``GET /v1/allocations`` with ``token`` (and the
        ``service`` token)."""
        headers = {"X-Auth-Token": token}
        if service is not None:
            headers["X-Service-Token"] = service
        response = (server or self.server).request(
            "GET", "/v1/allocations", auth=False, headers=headers)
        if response.status_code == 401:
            self.assertEqual(_UNAUTHORIZED, response.json())
        return response.status_code

    def _startup_settings(self, server: _cloud.Server) -> str:
        """The line the server logs with its [keystone_authtoken]."""
        lines = [line for line in server.log().splitlines()
                 if "[keystone_authtoken] token_cache_time" in line]
        self.assertEqual(1, len(lines), server.log()[-3000:])
        return lines[0]

    def _reviving_server(self) -> _cloud.Server:
        """A second server whose operator named the service role, as
        Ironic's keystonemiddleware defaults have it (started once)."""
        cls = type(self)
        if cls.revives is None:
            cls.revives = self.cloud.another_server(
                "service_token_roles = service\n")
            cls.addClassCleanup(cls.revives.cleanup)
        self.assertIn("service_token_roles = ['service'] ",
                      self._startup_settings(cls.revives))
        return cls.revives

    def _new_member(self, project: str, project_id: str) -> tuple[str, str]:
        """A new member of ``project``; its name and Keystone ID."""
        name = "m-" + uuid.uuid4().hex[:8]
        user = _cloud.User(name, "pw-" + uuid.uuid4().hex, project)
        return name, self.cloud.add_user(user, project_id, "member")

    def test_revoked_token_works_only_until_its_cache_entry_ends(
            self) -> None:
        self.assertIn(f"token_cache_time = {CACHE_SECONDS},",
                      self._startup_settings(self.server))
        project = "proj-c-" + uuid.uuid4().hex[:6]
        project_id = self.cloud.add_project(project)
        in_disabled_project, _ = self._new_member(project, project_id)
        deleted, deleted_id = self._new_member(
            self.cloud.project_a, self.project_id(ALICE))
        tokens = [self.cloud.token(in_disabled_project),
                  self.cloud.token(deleted)]
        first = time.monotonic()
        self.assertEqual([200, 200], [self._answer(t) for t in tokens])
        seen = time.monotonic()  # both validated, and cached, by now
        admin, keystone = self.cloud.session(ADMIN), self.cloud.keystone.url
        admin.patch(f"{keystone}/projects/{project_id}",
                    json={"project": {"enabled": False}})
        admin.delete(f"{keystone}/users/{deleted_id}")
        for token in tokens:  # Keystone refuses them from now on...
            self.assertEqual(404, admin.get(
                f"{keystone}/auth/tokens", raise_exc=False,
                headers={"X-Subject-Token": token}).status_code)
        # ...this server, having seen them, not yet.
        self.assertEqual([200, 200], [self._answer(t) for t in tokens])
        self.assertLess(time.monotonic() - first, CACHE_SECONDS - 2,
                        "too slow to ask within the cache time")
        time.sleep(max(0.0, seen + CACHE_SECONDS + 1 - time.monotonic()))
        self.assertEqual([401, 401], [self._answer(t) for t in tokens])

    def test_service_token_revives_no_expired_token_by_default(self) -> None:
        issuer = self.cloud.keystone.issuer(SHORT_LIFE)
        self.addCleanup(issuer.close)
        access = self.cloud.users[ALICE].auth(issuer.url).get_access(
            ks_session.Session())
        expired = str(access.auth_token)
        self.assertIn("service_token_roles = [] ",
                      self._startup_settings(self.server))
        # The operator who names the role gets keystonemiddleware's own
        # default (Ironic's): a service token revives an expired token.
        revives = self._reviving_server()
        assert access.expires is not None
        time.sleep(max(0.0, (access.expires - datetime.datetime.now(
            datetime.timezone.utc)).total_seconds() + 1))
        service = self.cloud.token(SERVICE)  # its only role is service
        self.assertEqual(401, self._answer(expired))
        self.assertEqual(401, self._answer(expired, service=service))
        # The header is ignored, not refused: a valid token still works.
        self.assertEqual(200, self._answer(self.cloud.token(BOB),
                                           service=service))
        self.assertEqual(200, self._answer(expired, revives,
                                           service=service))
        self.assertEqual(401, self._answer(expired, revives))
        # service_token_roles_required: a service token without the role
        # is refused, even beside a valid user token.
        self.assertEqual(401, self._answer(
            expired, revives, service=self.cloud.token(BOB)))
        self.assertEqual(401, self._answer(
            self.cloud.token(BOB), revives,
            service=self.cloud.token(ALICE)))

    def test_application_credential_access_rules_are_enforced(self) -> None:
        self.assertIn("service_type = baremetal",
                      self._startup_settings(self.server))
        mine = self._allocate(ALICE)
        session = self.cloud.session(ALICE)
        secret = "ac-" + uuid.uuid4().hex
        created = session.post(
            f"{self.cloud.keystone.url}/users/{session.get_user_id()}/"
            "application_credentials",
            json={"application_credential": {
                "name": "ac-rules-" + uuid.uuid4().hex[:6], "secret": secret,
                "access_rules": [
                    {"service": "baremetal", "method": "GET",
                     "path": "/v1/allocations"},
                    {"service": "baremetal", "method": "GET",
                     "path": "/v1/allocations/*"}]}},
        ).json()["application_credential"]
        plugin = v3.ApplicationCredential(
            auth_url=self.cloud.keystone.url,
            application_credential_id=created["id"],
            application_credential_secret=secret)
        sdk = self.sdk(ALICE, plugin)
        self.assertIn(mine["uuid"], [a.uuid for a in sdk.list_allocations()])
        self.assertEqual(mine["uuid"], sdk.get_allocation(mine["uuid"]).uuid)
        token = plugin.get_token(ks_session.Session())
        for method, path in (
                ("GET", "/v1/nodes"),
                ("POST", "/v1/allocations"),
                ("PATCH", f"/v1/allocations/{mine['uuid']}"),
                ("DELETE", f"/v1/allocations/{mine['uuid']}")):
            response = self.server.request(
                method, path, {} if method in ("POST", "PATCH") else None,
                auth=False, headers={"X-Auth-Token": str(token)})
            self.assertEqual(401, response.status_code, (method, path))
            self.assertEqual(_UNAUTHORIZED, response.json())
        # A service token (dropped here) would lift the rules, as it does
        # where the operator names the service role.
        service = {"X-Auth-Token": str(token),
                   "X-Service-Token": self.cloud.token(SERVICE)}
        for server, status in ((self.server, 401),
                               (self._reviving_server(), 200)):
            self.assertEqual(status, server.request(
                "GET", "/v1/nodes", auth=False,
                headers=service).status_code)
        self.assertEqual("active", self.server.expect(
            200, "GET", f"/v1/allocations/{mine['uuid']}",
            auth=ALICE)["state"])
