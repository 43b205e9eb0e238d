"""htpasswd and project mapping parsing, credential checks, middleware."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from typing import Any

import bcrypt
import testtools
from werkzeug.test import Client
from werkzeug.wrappers import Response

from baremetal_allocclient.server.api import auth


def _hash(password: str) -> str:
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()


def _basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


class HtpasswdTests(testtools.TestCase):

    def test_bcrypt_entries_comments_and_blank_lines(self) -> None:
        digest = _hash("pw")
        users = auth.parse_htpasswd(
            f"# comment\n\nalice:{digest}\nbob:$2y${digest[4:]}\n")
        self.assertEqual({"alice", "bob"}, set(users))

    def test_other_hash_formats_are_refused(self) -> None:
        for line in ("alice:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=",
                     "alice:$apr1$abc$def", "alice:plain"):
            error = self.assertRaises(auth.AuthConfigError,
                                      auth.parse_htpasswd, line, "f")
            self.assertIn("bcrypt", str(error))
            self.assertIn("f:1", str(error))

    def test_malformed_line(self) -> None:
        self.assertRaises(auth.AuthConfigError, auth.parse_htpasswd,
                          "no-colon-here")


class ProjectsTests(testtools.TestCase):

    def test_admin_and_member(self) -> None:
        mapping = auth.parse_projects({"users": {
            "root": {"roles": ["admin"]},
            "alice": {"project": "p1", "roles": ["member"]},
        }})
        self.assertEqual(auth.Principal("root", None, True), mapping["root"])
        self.assertEqual(auth.Principal("alice", "p1", False),
                         mapping["alice"])

    def test_invalid_mappings(self) -> None:
        for data in (
            None, [], {"users": []}, {"users": {}, "extra": 1},
            {"users": {"a": {"roles": ["member"]}}},  # member, no project
            {"users": {"a": {"project": "p", "roles": []}}},
            {"users": {"a": {"project": "p", "roles": ["root"]}}},
            {"users": {"a": {"project": "", "roles": ["member"]}}},
            {"users": {"a": {"project": "p", "roles": ["member"], "x": 1}}},
            {"users": {"a": "member"}},
        ):
            self.assertRaises(auth.AuthConfigError, auth.parse_projects,
                              data)


class AuthenticatorTests(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.authenticator = auth.Authenticator(
            {"alice": _hash("secret").encode()},
            {"alice": auth.Principal("alice", "p1", False)},
        )

    def test_check(self) -> None:
        self.assertTrue(self.authenticator.check("alice", b"secret"))
        self.assertTrue(self.authenticator.check("alice", b"secret"))  # hit
        self.assertFalse(self.authenticator.check("alice", b"Secret"))
        self.assertFalse(self.authenticator.check("alice", b""))
        self.assertFalse(self.authenticator.check("bob", b"secret"))

    def test_principal(self) -> None:
        self.assertEqual("p1", self.authenticator.principal("alice").project)
        self.assertIsNone(self.authenticator.principal("carol"))
        everyone_admin = auth.Authenticator({}, None)
        self.assertTrue(everyone_admin.principal("x").admin)

    def test_parse_authorization(self) -> None:
        self.assertEqual(("u", b"p:q"), auth.parse_authorization(
            _basic("u", "p:q")["Authorization"]))
        for header, status in ((None, 401), ("Bearer x", 400),
                               ("Basic", 400), ("Basic %%%", 400),
                               ("Basic " + base64.b64encode(b"x").decode(),
                                401)):
            error = self.assertRaises(auth.Rejected,
                                      auth.parse_authorization, header)
            self.assertEqual(status, error.status, header)


class MemberMayTests(testtools.TestCase):

    def test_table(self) -> None:
        for method, path, allowed in (
            ("GET", "/v1/nodes", True),
            ("GET", "/v1/nodes/x/states", True),
            ("POST", "/v1/nodes", False),
            ("PATCH", "/v1/nodes/x", False),
            ("DELETE", "/v1/nodes/x", False),
            ("PUT", "/v1/nodes/x/states/provision", False),
            ("DELETE", "/v1/nodes/x/allocation", True),
            ("DELETE", "/v1/nodes/x/traits", False),
            ("POST", "/v1/allocations", True),
            ("DELETE", "/v1/allocations/x", True),
        ):
            self.assertEqual(allowed, auth.member_may(method, path),
                             (method, path))


class MiddlewareTests(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.seen: list[dict[str, Any]] = []

        def app(environ: dict[str, Any], start: Any) -> Iterable[bytes]:
            self.seen.append(dict(environ))
            return Response("ok")(environ, start)

        authenticator = auth.Authenticator(
            {"alice": _hash("pw").encode(), "root": _hash("rpw").encode()},
            {"alice": auth.Principal("alice", "p1", False),
             "root": auth.Principal("root", None, True)},
        )
        self.client = Client(auth.BasicAuthMiddleware(app, authenticator))

    def test_missing_credentials(self) -> None:
        response = self.client.get("/v1/allocations")
        self.assertEqual(401, response.status_code)
        self.assertEqual(auth.REALM, response.headers["WWW-Authenticate"])
        self.assertEqual(
            {"error": {"message": "Authorization required", "code": 401}},
            json.loads(response.get_data()))
        self.assertEqual([], self.seen)

    def test_public_paths(self) -> None:
        for path in ("/", "/v1", "/v1/", "/v1/openapi.json"):
            self.assertEqual(200, self.client.get(path).status_code, path)

    def test_paths_that_only_look_public_need_credentials(self) -> None:
        for path in ("/v1/openapi.json/../nodes", "/v1//nodes",
                     "//v1/nodes", "/v1/nodes/../", "/v1/openapi.jsonx",
                     "/v10", "/v1/%2e%2e/nodes"):
            self.assertEqual(401, self.client.get(path).status_code, path)
        self.assertEqual([], self.seen)

    def test_credentials_are_not_passed_on(self) -> None:
        response = self.client.get("/v1/nodes",
                                   headers=_basic("alice", "pw"))
        self.assertEqual(200, response.status_code)
        environ = self.seen[-1]
        self.assertNotIn("HTTP_AUTHORIZATION", environ)
        self.assertEqual("alice", environ["REMOTE_USER"])
        self.assertEqual(auth.Principal("alice", "p1", False),
                         auth.principal_of(environ))

    def test_member_node_write_is_403(self) -> None:
        # Not naming a node: refused at once.
        response = self.client.post("/v1/nodes",
                                    headers=_basic("alice", "pw"))
        self.assertEqual(403, response.status_code)
        self.assertEqual([], self.seen)
        # Naming one: the refusal goes to the application, which finds
        # the node first (404 for one the member cannot see, as Ironic).
        response = self.client.put("/v1/nodes/x/states/power",
                                   headers=_basic("alice", "pw"))
        self.assertEqual("Only an admin may change nodes",
                         auth.principal_of(self.seen[-1]).refused)
        response = self.client.put("/v1/nodes/x/states/power",
                                   headers=_basic("root", "rpw"))
        self.assertEqual(200, response.status_code)
        self.assertIsNone(auth.principal_of(self.seen[-1]).refused)

    def test_noauth_principal_is_admin(self) -> None:
        self.assertTrue(auth.principal_of({}).admin)
