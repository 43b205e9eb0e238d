"""``--auth-strategy http_basic`` against a real server process."""

from __future__ import annotations

import base64
import uuid

import testtools

from baremetal_allocclient.server import openapi
from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)
from baremetal_allocclient.tests.functional.security import _support as sup


def _concrete(route: str) -> str:
    return route.replace("<ident>", str(uuid.uuid4())).replace(
        "<trait>", "CUSTOM_X")


class HttpBasicTests(testtools.TestCase):
    """Every API route needs valid credentials; discovery stays public."""

    server: InProcessServer
    creds: sup.Credentials

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.server = serve_for_class(cls, http_basic=True)
        cls.creds = cls.server.creds

    def _assert_401(self, response: object) -> None:
        import requests

        assert isinstance(response, requests.Response)
        self.assertEqual(401, response.status_code, response.text)
        self.assertEqual('Basic realm="Baremetal API"',
                         response.headers.get("WWW-Authenticate"))
        self.assertEqual(401, response.json()["error"]["code"])

    def test_every_endpoint_without_credentials_is_401(self) -> None:
        checked = 0
        for op in openapi.OPERATIONS:
            path = _concrete(op.path)
            body = {} if op.method in ("POST", "PUT", "PATCH") else None
            self._assert_401(self.server.request(op.method, path, body,
                                                 auth=False))
            self._assert_401(self.server.request(op.method, path, body,
                                                 auth=("", "")))
            checked += 1
        self.assertEqual(len(openapi.OPERATIONS), checked)
        self.assertGreaterEqual(checked, 24)

    def test_no_authorization_header_at_all(self) -> None:
        import requests

        for op in openapi.OPERATIONS:
            response = requests.request(
                op.method, self.server.endpoint + _concrete(op.path),
                timeout=10,
            )
            self._assert_401(response)

    def test_wrong_password_and_unknown_user_are_401(self) -> None:
        for auth in ((sup.ALICE, "wrong"),
                     (sup.ALICE, self.creds.passwords[sup.BOB]),
                     ("nobody", "whatever"),
                     (sup.ADMIN, self.creds.passwords[sup.ADMIN] + "x"),
                     (sup.ADMIN, "")):
            self._assert_401(self.server.request(
                "GET", "/v1/allocations", auth=auth))
            self._assert_401(self.server.request(
                "POST", "/v1/allocations", {"resource_class": "x"},
                auth=auth))

    def test_malformed_authorization_is_a_4xx(self) -> None:
        for header in ("Bearer abc", "Basic", "Basic !!!notbase64",
                       "Basic " + base64.b64encode(b"no-colon").decode(),
                       "Basic " + base64.b64encode(b"\xff\xfe:x").decode()):
            response = self.server.request(
                "GET", "/v1/nodes", auth=False,
                headers={"Authorization": header})
            self.assertIn(response.status_code, (400, 401), header)
            self.assertNotIn("Traceback", response.text)

    def test_valid_credentials_work_including_2y_hashes(self) -> None:
        for user in (sup.ADMIN, sup.ALICE, sup.BOB):
            response = self.server.request(
                "GET", "/v1/allocations", auth=self.creds.auth(user))
            self.assertEqual(200, response.status_code, response.text)

    def test_user_without_a_role_is_403(self) -> None:
        response = self.server.request(
            "GET", "/v1/allocations", auth=self.creds.auth(sup.CAROL))
        self.assertEqual(403, response.status_code)

    def test_discovery_and_openapi_are_public(self) -> None:
        import requests

        for path in ("/", "/v1", "/v1/openapi.json"):
            response = requests.get(self.server.endpoint + path, timeout=10)
            self.assertEqual(200, response.status_code, path)
        self.assertEqual(openapi.document(), requests.get(
            self.server.endpoint + "/v1/openapi.json", timeout=10).json())

    def test_members_may_not_change_nodes(self) -> None:
        node = self.server.make_nodes(1, "rc-" + uuid.uuid4().hex[:8],
                                      owner=sup.PROJECT_A)[0]
        alice = self.creds.auth(sup.ALICE)
        path = f"/v1/nodes/{node['uuid']}"
        for method, sub, body in (
            ("PATCH", "", [{"op": "add", "path": "/extra/x", "value": 1}]),
            ("DELETE", "", None),
            ("PUT", "/states/provision", {"target": "active"}),
            ("PUT", "/states/power", {"target": "power on"}),
            ("PUT", "/maintenance", {"reason": "x"}),
            ("PUT", "/traits", {"traits": ["CUSTOM_A"]}),
            ("PUT", "/traits/CUSTOM_A", None),
            ("DELETE", "/traits", None),
        ):
            response = self.server.request(method, path + sub, body,
                                           auth=alice)
            self.assertEqual(403, response.status_code, (method, sub))
        self.assertEqual(201, self.server.request(
            "POST", "/v1/nodes", {"driver": "fake-hardware"}).status_code)
        self.assertEqual(403, self.server.request(
            "POST", "/v1/nodes", {"driver": "fake-hardware"},
            auth=alice).status_code)
        # What the member may do: read its node.
        self.server.expect(200, "GET", path, auth=alice)
        self.server.expect(200, "GET", path + "/states", auth=alice)

    def test_log_names_the_user_but_no_secret(self) -> None:
        self.server.expect(200, "GET", "/v1/nodes",
                           auth=self.creds.auth(sup.ALICE))
        self.server.request("GET", "/v1/nodes",
                            auth=(sup.BOB, self.creds.passwords[sup.ALICE]))
        log = self.server.log()
        self.assertIn("user=alice", log)
        self.assertEqual([], sup.secrets_in(log, self.creds))
        self.assertNotIn("Traceback", log)
