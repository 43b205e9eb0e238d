"""TLS with a test CA and http_basic, through every client we support.

Our SDK, both of our CLIs, the real python-ironicclient (in the real-clients
virtualenv) and the real openstacksdk authenticate with keystoneauth's
``http_basic``, verify the server certificate by default and accept a CA
bundle.  ``--debug`` output never shows a password or basic-auth token.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Sequence
from typing import Any

import requests
import testtools

from baremetal_allocclient import exceptions
from baremetal_allocclient.tests.fixtures import preforked
from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)
from baremetal_allocclient.tests.fixtures.processes import clean_env
from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.tests.functional.security import _support as sup
from baremetal_allocclient.v1 import Client


class TlsClientTests(testtools.TestCase):
    """One HTTPS server with http_basic and a project mapping."""

    server: InProcessServer
    creds: sup.Credentials
    tls: sup.TlsFiles
    rc: str

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.server = serve_for_class(cls, http_basic=True, tls=True)
        cls.creds, cls.tls = cls.server.creds, cls.server.tls
        cls.rc = "rc-" + uuid.uuid4().hex[:8]
        cls.server.make_nodes(3, cls.rc, owner=sup.PROJECT_A)

    def _no_secrets(self, *texts: str) -> None:
        for text in texts:
            self.assertEqual([], sup.secrets_in(text, self.creds))

    def _auth_args(self, user: str = sup.ALICE,
                   password: bool = True) -> list[str]:
        """Options for ``user``; without the password it goes in
        ``OS_PASSWORD``, since python-openstackclient echoes its whole
        command line at ``--debug`` (upstream behaviour)."""
        return ["--os-auth-type", "http_basic",
                "--os-username", user,
                *(["--os-password", self.creds.passwords[user]]
                  if password else []),
                "--os-endpoint", self.server.endpoint]

    def _password_env(self, user: str = sup.ALICE) -> dict[str, str]:
        return {"OS_PASSWORD": self.creds.passwords[user]}

    # -- raw HTTPS -----------------------------------------------------------

    def test_https_round_trip_with_the_test_ca(self) -> None:
        body = self.server.expect(200, "GET", "/v1/allocations",
                                  auth=self.creds.auth(sup.ALICE))
        self.assertEqual([], [a for a in body["allocations"]
                              if a["owner"] != sup.PROJECT_A])
        root = requests.get(self.server.endpoint + "/", verify=self.tls.ca,
                            timeout=10).json()
        self.assertTrue(root["default_version"]["links"][0]["href"]
                        .startswith("https://"))

    def test_default_verification_rejects_the_unknown_ca(self) -> None:
        self.assertRaises(requests.exceptions.SSLError, requests.get,
                          self.server.endpoint + "/", timeout=10)

    def test_plain_http_to_the_tls_port_fails(self) -> None:
        plain = self.server.endpoint.replace("https://", "http://")
        try:
            response = requests.get(plain + "/v1/allocations", timeout=10)
        except requests.ConnectionError:
            return
        self.assertGreaterEqual(response.status_code, 400)

    # -- our SDK -------------------------------------------------------------

    def _session_client(self, verify: bool | str, user: str = sup.ALICE,
                        password: str | None = None) -> Client:
        from keystoneauth1 import http_basic, session

        plugin = http_basic.HTTPBasicAuth(
            endpoint=self.server.endpoint, username=user,
            password=password or self.creds.passwords[user])
        return Client.from_session(session.Session(auth=plugin,
                                                   verify=verify))

    def test_sdk_from_session_with_http_basic(self) -> None:
        client = self._session_client(self.tls.ca)
        allocation = client.allocate(self.rc, timeout=30)
        self.addCleanup(client.delete_allocation, allocation.uuid,
                        ignore_missing=True)
        self.assertEqual(sup.PROJECT_A, allocation.owner)
        self.assertEqual("active", allocation.state)
        listed = [a.uuid for a in client.list_allocations()]
        self.assertIn(allocation.uuid, listed)

    def test_sdk_verifies_by_default(self) -> None:
        client = self._session_client(True)
        error = self.assertRaises(exceptions.ConnectionFailed,
                                  lambda: list(client.list_allocations()))
        self.assertIn("certificate", str(error))
        endpoint_client = Client.from_endpoint(self.server.endpoint)
        self.assertRaises(exceptions.ConnectionFailed,
                          lambda: endpoint_client.api_version)

    def test_sdk_wrong_password_is_unauthorized(self) -> None:
        client = self._session_client(self.tls.ca, password="nope")
        self.assertRaises(exceptions.Unauthorized,
                          lambda: list(client.list_allocations()))

    def test_sdk_from_cloud_with_http_basic_and_cacert(self) -> None:
        client = Client.from_cloud(
            auth_type="http_basic",
            auth={"endpoint": self.server.endpoint, "username": sup.ALICE,
                  "password": self.creds.passwords[sup.ALICE]},
            cacert=self.tls.ca, load_yaml_config=False,
            load_envvars=False,
        )
        self.assertIsInstance(list(client.list_allocations()), list)

    # -- our CLIs ------------------------------------------------------------

    def _cli(self, name: str, args: Sequence[str],
             env: dict[str, str] | None = None,
             ) -> subprocess.CompletedProcess[str]:
        result = sup.command(name, args, env)
        self.assertNotIn("Traceback", result.stderr + result.stdout)
        return result

    def test_baremetal_alloc_with_cacert_and_debug(self) -> None:
        name = "cli-" + uuid.uuid4().hex[:8]
        result = self._cli("baremetal-alloc", [
            "--debug", *self._auth_args(), "--os-cacert", self.tls.ca,
            "create", "--resource-class", self.rc, "--name", name,
            "--wait", "30", "-f", "json"])
        self.assertEqual(0, result.returncode, result.stderr)
        self.addCleanup(self.server.request, "DELETE",
                        f"/v1/allocations/{name}")
        # keystoneauth logs the header, hashed.
        self.assertIn('"Authorization: {SHA256}', result.stderr)
        self._no_secrets(result.stdout, result.stderr)
        listed = self._cli("baremetal-alloc", [
            *self._auth_args(), "--os-cacert", self.tls.ca, "list",
            "-f", "value", "-c", "Name"])
        self.assertIn(name, listed.stdout.split())

    def test_baremetal_alloc_verifies_by_default(self) -> None:
        result = self._cli("baremetal-alloc", [*self._auth_args(), "list"])
        self.assertNotEqual(0, result.returncode)
        self.assertIn("certificate", result.stderr)
        insecure = self._cli("baremetal-alloc", [
            *self._auth_args(), "--insecure", "list"])
        self.assertEqual(0, insecure.returncode, insecure.stderr)

    def test_baremetal_alloc_wrong_password(self) -> None:
        result = self._cli("baremetal-alloc", [
            "--os-auth-type", "http_basic", "--os-username", sup.ALICE,
            "--os-password", "wrong-password-123", "--os-endpoint",
            self.server.endpoint, "--os-cacert", self.tls.ca, "list"])
        self.assertNotEqual(0, result.returncode)
        self.assertNotIn("wrong-password-123", result.stderr)

    def test_openstack_plugin_with_cacert_and_debug(self) -> None:
        result = self._cli("openstack", [
            "--debug", *self._auth_args(password=False),
            "--os-cacert", self.tls.ca,
            "baremetal", "allocation", "list", "-f", "json"],
            self._password_env())
        self.assertEqual(0, result.returncode, result.stderr[-3000:])
        self._no_secrets(result.stdout, result.stderr)
        unverified = self._cli("openstack", [
            *self._auth_args(), "baremetal", "allocation", "list"])
        self.assertNotEqual(0, unverified.returncode)

    # -- the real clients ----------------------------------------------------

    def _real(self, command: str, args: Sequence[str],
              extra_env: dict[str, str] | None = None,
              ) -> subprocess.CompletedProcess[str]:
        bin_dir = targets.ensure_ironic_venv()
        env = clean_env(extra_env)
        return preforked.run([os.path.join(bin_dir, command), *args],
                             env=env, timeout=180)

    def test_real_ironicclient_authenticates(self) -> None:
        ok = self._real("openstack", [
            "--debug", *self._auth_args(sup.ADMIN, password=False),
            "--os-cacert", self.tls.ca, "baremetal", "node", "list",
            "-f", "json"], self._password_env(sup.ADMIN))
        self.assertEqual(0, ok.returncode, ok.stderr[-3000:])
        self._no_secrets(ok.stdout, ok.stderr)
        alloc = self._real("baremetal", [
            *self._auth_args(), "--os-cacert", self.tls.ca,
            "allocation", "list", "-f", "json"])
        self.assertEqual(0, alloc.returncode, alloc.stderr[-3000:])
        wrong = self._real("openstack", [
            "--os-auth-type", "http_basic", "--os-username", sup.ALICE,
            "--os-password", "bad", "--os-endpoint", self.server.endpoint,
            "--os-cacert", self.tls.ca, "baremetal", "node", "list"])
        self.assertNotEqual(0, wrong.returncode)
        unverified = self._real("openstack", [
            *self._auth_args(), "baremetal", "node", "list"])
        self.assertNotEqual(0, unverified.returncode)

    def test_real_openstacksdk_authenticates(self) -> None:
        import openstack

        def connect(**extra: Any) -> Any:
            return openstack.connect(
                auth_type="http_basic",
                auth={"endpoint": self.server.endpoint,
                      "username": sup.ALICE,
                      "password": self.creds.passwords[sup.ALICE]},
                baremetal_endpoint_override=self.server.endpoint,
                load_yaml_config=False, load_envvars=False,
                baremetal_status_code_retries=0, **extra)

        conn = connect(cacert=self.tls.ca)
        nodes = list(conn.baremetal.nodes(details=True))
        self.assertEqual({sup.PROJECT_A}, {n.owner for n in nodes})
        allocation = conn.baremetal.create_allocation(resource_class=self.rc)
        self.addCleanup(conn.baremetal.delete_allocation, allocation.id,
                        ignore_missing=True)
        done = conn.baremetal.wait_for_allocation(allocation, timeout=30)
        self.assertEqual("active", done.state)
        self.assertEqual(sup.PROJECT_A, done.owner)
        from keystoneauth1 import exceptions as ks_exc

        # Without the CA bundle the certificate is refused (openstacksdk
        # reports it as a failed version discovery).
        self.assertRaises(
            (ks_exc.SSLError, ks_exc.DiscoveryFailure),
            lambda: list(connect().baremetal.nodes()))
