"""Tests of the Client itself: its constructors.
"""

from __future__ import annotations

import os
import tempfile

import fixtures
import testtools
from keystoneauth1 import fixture as ks_fixture
from keystoneauth1 import session as ks_session
from requests_mock.contrib import fixture as rm_fixture

from baremetal_allocclient import exceptions
from baremetal_allocclient.tests.unit.v1 import fakes
from baremetal_allocclient.tests.unit.v1.client_case import (
    ALLOCS,
    E,
)
from baremetal_allocclient.v1 import Client


class ConstructorTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.mock = self.useFixture(rm_fixture.Fixture())
        for name in list(os.environ):
            if name.startswith("OS_"):
                self.useFixture(fixtures.EnvironmentVariable(name))

    def _clouds(self, text: str) -> None:
        folder = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(folder))
        path = os.path.join(folder, "clouds.yaml")
        with open(path, "w") as handle:
            handle.write(text)
        self.useFixture(fixtures.EnvironmentVariable(
            "OS_CLIENT_CONFIG_FILE", path))

    def test_from_endpoint(self) -> None:
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        client = Client.from_endpoint(E + "/v1", api_version="1.58")
        client.get_allocation("a1")
        request = self.mock.request_history[0]
        self.assertEqual("1.58",
                         request.headers["X-OpenStack-Ironic-API-Version"])
        self.assertNotIn("X-Auth-Token", request.headers)
        self.assertIn("baremetal-allocclient", request.headers["User-Agent"])

    def test_from_endpoint_rejects_non_urls(self) -> None:
        self.assertRaises(exceptions.InvalidArgument,
                          Client.from_endpoint, "ironic.test:6385")

    def test_from_cloud_none_auth_with_override(self) -> None:
        self._clouds(
            "clouds:\n"
            "  lab:\n"
            "    auth_type: none\n"
            "    auth:\n"
            "      endpoint: http://other.test:1\n"
            f"    baremetal_endpoint_override: {E}\n"
            "    baremetal_api_version: '1.58'\n")
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        client = Client.from_cloud("lab")
        client.get_allocation("a1")
        request = self.mock.request_history[0]
        self.assertEqual(ALLOCS + "/a1", request.url)
        self.assertEqual("1.58",
                         request.headers["X-OpenStack-Ironic-API-Version"])

    def test_from_cloud_none_auth_endpoint_only(self) -> None:
        self._clouds(
            "clouds:\n"
            "  lab:\n"
            "    auth_type: none\n"
            "    auth:\n"
            f"      endpoint: {E}/v1\n")
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        Client.from_cloud("lab").get_allocation("a1")
        request = self.mock.request_history[0]
        self.assertEqual(ALLOCS + "/a1", request.url)
        self.assertEqual("1.65",
                         request.headers["X-OpenStack-Ironic-API-Version"])

    def test_from_cloud_overrides(self) -> None:
        self._clouds("clouds: {}\n")
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        Client.from_cloud(auth_type="none", auth={"endpoint": E},
                          api_version="1.60").get_allocation("a1")
        self.assertEqual("1.60", self.mock.request_history[0].headers[
            "X-OpenStack-Ironic-API-Version"])

    def test_from_cloud_http_basic_from_env(self) -> None:
        for name, value in (("OS_AUTH_TYPE", "http_basic"),
                            ("OS_ENDPOINT", E), ("OS_USERNAME", "admin"),
                            ("OS_PASSWORD", "secret")):
            self.useFixture(fixtures.EnvironmentVariable(name, value))
        self._clouds("clouds: {}\n")
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        Client.from_cloud().get_allocation("a1")
        request = self.mock.request_history[0]
        self.assertEqual(ALLOCS + "/a1", request.url)
        self.assertTrue(request.headers["Authorization"].startswith("Basic "))

    def _keystone(self, status: int = 201) -> None:
        keystone = "http://keystone.test/v3"
        self.mock.get(keystone, json={"version": ks_fixture.V3Discovery(
            keystone)})
        token = ks_fixture.V3Token()
        token.set_project_scope()
        service = token.add_service("baremetal")
        service.add_standard_endpoints(
            public=E, internal="http://internal.test:6385",
            region="RegionOne")
        if status == 201:
            self.mock.post(keystone + "/auth/tokens", json=token,
                           status_code=201,
                           headers={"X-Subject-Token": "tok-1"})
        else:
            self.mock.post(keystone + "/auth/tokens", status_code=status,
                           json={"error": {"message": "bad password",
                                           "code": status}})
        self._clouds(
            "clouds:\n"
            "  cloud:\n"
            "    auth_type: password\n"
            "    region_name: RegionOne\n"
            "    auth:\n"
            f"      auth_url: {keystone}\n"
            "      username: u\n"
            "      password: p\n"
            "      project_name: proj\n"
            "      user_domain_name: Default\n"
            "      project_domain_name: Default\n")

    def test_from_cloud_password_uses_token_and_catalog(self) -> None:
        self._keystone()
        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        client = Client.from_cloud("cloud")
        self.assertEqual("a1", client.get_allocation("a1").uuid)
        request = self.mock.request_history[-1]
        self.assertEqual(ALLOCS + "/a1", request.url)
        self.assertEqual("tok-1", request.headers["X-Auth-Token"])

    def test_from_cloud_wrong_password_is_unauthorized(self) -> None:
        self._keystone(status=401)
        client = Client.from_cloud("cloud")
        error = self.assertRaises(exceptions.Unauthorized,
                                  client.get_allocation, "a1")
        self.assertEqual(401, error.status_code)

    def test_from_cloud_unknown_cloud(self) -> None:
        self._clouds("clouds: {}\n")
        self.assertRaises(exceptions.ConfigurationError,
                          Client.from_cloud, "missing")

    def test_from_client_manager(self) -> None:
        class Manager:
            session = ks_session.Session()
            region_name = "RegionOne"
            interface = "internal"

            def get_endpoint_for_service_type(
                    self, service_type: str, region_name: str | None = None,
                    interface: str = "public") -> str:
                assert (service_type, region_name, interface) == (
                    "baremetal", "RegionOne", "internal")
                return E

        self.mock.get(ALLOCS + "/a1", json=fakes.allocation())
        client = Client.from_client_manager(Manager(), api_version="1.60")
        client.get_allocation("a1")
        self.assertEqual(ALLOCS + "/a1", self.mock.request_history[0].url)

    def test_no_endpoint_is_a_configuration_error(self) -> None:
        client = Client.from_session(ks_session.Session())
        error = self.assertRaises(exceptions.ConfigurationError,
                                  client.get_allocation, "a1")
        self.assertIn("endpoint", str(error))
