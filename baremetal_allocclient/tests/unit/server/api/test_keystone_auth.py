"""``--auth-strategy keystone``: token headers to a principal, and the
configuration checks made before ``serve`` listens."""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile

import fixtures
import testtools

from baremetal_allocclient.server import cmd, security
from baremetal_allocclient.server.api import auth, keystone

_EXPLAIN = "/v1/allocation_explain"


def _environ(roles: str, project: str | None = None,
             system: str | None = None) -> dict[str, str]:
    environ = {"HTTP_X_ROLES": roles, "HTTP_X_USER_NAME": "u"}
    if project is not None:
        environ["HTTP_X_PROJECT_ID"] = project
    if system is not None:
        environ["HTTP_OPENSTACK_SYSTEM_SCOPE"] = system
    return environ


class PrincipalTests(testtools.TestCase):

    def test_system_scope(self) -> None:
        self.assertEqual(
            auth.Principal("u", None, True),
            keystone.principal_from_headers(
                _environ("admin,member,reader", system="all")))
        self.assertEqual(
            auth.Principal("u", None, True, read_only=True),
            keystone.principal_from_headers(
                _environ("reader", system="all")))
        self.assertIsNone(keystone.principal_from_headers(
            _environ("service", system="all")))

    def test_project_scope(self) -> None:
        for roles in ("member,reader", "admin,member,reader", "Member"):
            self.assertEqual(
                auth.Principal("u", "p1", False),
                keystone.principal_from_headers(_environ(roles, "p1")),
                roles)
        self.assertEqual(
            auth.Principal("u", "p1", False, read_only=True),
            keystone.principal_from_headers(_environ("reader", "p1")))
        for roles in ("", "service", "load-balancer_member"):
            self.assertIsNone(keystone.principal_from_headers(
                _environ(roles, "p1")), roles)

    def test_no_scope_is_no_role(self) -> None:
        self.assertIsNone(keystone.principal_from_headers(
            _environ("admin,member")))

    def test_readers_read_and_explain_only(self) -> None:
        reader = auth.Principal("u", "p1", False, read_only=True)
        for method, path in (("GET", "/v1/allocations"),
                             ("HEAD", "/v1/nodes"),
                             ("POST", _EXPLAIN)):
            self.assertIs(reader, keystone.check(reader, method, path, "u"))
        for method, path in (("POST", "/v1/allocations"),
                             ("PATCH", "/v1/allocations/a")):
            error = self.assertRaises(auth.Rejected, keystone.check, reader,
                                      method, path, "u")
            self.assertEqual(403, error.status)
        # Naming a node: refused once the node is found (404 first).
        self.assertEqual("A reader may not change anything", keystone.check(
            reader, "DELETE", "/v1/nodes/n/allocation", "u").refused)

    def test_members_keep_the_member_rules(self) -> None:
        member = auth.Principal("u", "p1", False)
        self.assertIs(member, keystone.check(member, "POST",
                                             "/v1/allocations", "u"))
        self.assertEqual("Only an admin may change nodes", keystone.check(
            member, "PATCH", "/v1/nodes/n", "u").refused)
        error = self.assertRaises(auth.Rejected, keystone.check, member,
                                  "POST", "/v1/nodes", "u")
        self.assertEqual(403, error.status)
        error = self.assertRaises(auth.Rejected, keystone.check, None,
                                  "GET", "/v1/nodes", "carol")
        self.assertIn("carol", error.message)


def _args(**kw: object) -> argparse.Namespace:
    args = cmd.parse(["serve", "--config-file", os.devnull])
    for key, value in kw.items():
        setattr(args, key, value)
    return args


class _ConfigCase(testtools.TestCase):

    def _conf(self, text: str) -> str:
        directory = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, directory)
        path = os.path.join(directory, "baremetal-alloc.conf")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        return path

    def _error(self, **kw: object) -> str:
        error = self.assertRaises(security.SecurityConfigError,
                                  security.configure, _args(**kw))
        return str(error)


class ConfigTests(_ConfigCase):

    def test_keystone_needs_a_config_file(self) -> None:
        # Without --keystone-config the server's own (here empty)
        # configuration must hold the section.
        self.assertIn("[keystone_authtoken] needs www_authenticate_uri",
                      self._error(auth_strategy="keystone"))
        self.assertIn("no such file", self._error(
            auth_strategy="keystone", keystone_config="/nonexistent.conf"))

    def test_config_file_only_with_keystone(self) -> None:
        self.assertIn("needs --auth-strategy keystone", self._error(
            keystone_config=self._conf("[keystone_authtoken]\n")))
        self.assertIn("http_basic", self._error(
            auth_strategy="keystone", htpasswd="/x",
            keystone_config=self._conf("[keystone_authtoken]\n")))

    def test_missing_settings_are_named(self) -> None:
        message = self._error(auth_strategy="keystone", keystone_config=(
            self._conf("[keystone_authtoken]\n")))
        self.assertIn("www_authenticate_uri", message)
        self.assertIn("auth_type", message)
        # The service user's required options are checked at start.
        message = self._error(auth_strategy="keystone", keystone_config=(
            self._conf("[keystone_authtoken]\nauth_type = password\n"
                       "www_authenticate_uri = http://127.0.0.1:5000/v3\n")))
        self.assertIn("keystone_authtoken", message)
        self.assertIn("auth_url", message)

    def test_unparsable_file_is_one_message(self) -> None:
        self.assertIn("cannot read", self._error(
            auth_strategy="keystone",
            keystone_config=self._conf("not an ini file\n")))

    def test_password_from_the_environment(self) -> None:
        path = self._conf(
            "[keystone_authtoken]\nauth_type = password\n"
            "www_authenticate_uri = http://127.0.0.1:5000/v3\n"
            "auth_url = http://127.0.0.1:5000/v3\nusername = svc\n"
            "user_domain_name = Default\nproject_name = service\n"
            "project_domain_name = Default\n")
        self.useFixture(fixtures.EnvironmentVariable(
            keystone.PASSWORD_ENV, "from-env"))
        conf = keystone.load_config(path)
        keystone.wrapper(conf)
        self.assertEqual("from-env", conf[keystone.GROUP].password)
        self.assertEqual("svc", conf[keystone.GROUP].username)


_SERVICE_USER = (
    "[keystone_authtoken]\nauth_type = password\n"
    "www_authenticate_uri = http://127.0.0.1:5000/v3\n"
    "auth_url = http://127.0.0.1:5000/v3\nusername = svc\n"
    "password = p\nuser_domain_name = Default\nproject_name = service\n"
    "project_domain_name = Default\n")


class DefaultsTests(_ConfigCase):
    """keystonemiddleware's options with this server's defaults; what the
    operator's file says wins."""

    def _settings(self, extra: str = "") -> keystone.Settings:
        conf = keystone.load_config(self._conf(_SERVICE_USER + extra))
        keystone.wrapper(conf)
        return keystone.configure(conf)

    def test_defaults_when_the_file_is_silent(self) -> None:
        self.assertEqual(
            keystone.Settings(30, (), True, "baremetal"), self._settings())
        self.assertEqual(
            {"token_cache_time": 30, "service_token_roles": [],
             "service_token_roles_required": True,
             "service_type": "baremetal"}, dict(keystone.DEFAULTS))

    def test_the_operator_file_wins(self) -> None:
        self.assertEqual(
            keystone.Settings(-1, ("service", "admin"), False, "metal"),
            self._settings("token_cache_time = -1\n"
                           "service_token_roles = service, admin\n"
                           "service_token_roles_required = false\n"
                           "service_type = metal\n"))

    def test_the_settings_are_logged_in_one_line(self) -> None:
        self.assertEqual(
            "[keystone_authtoken] token_cache_time = 30, "
            "service_token_roles = [] (X-Service-Token ignored), "
            "service_token_roles_required = True, service_type = baremetal",
            self._settings().describe())
        self.assertIn("['service'] (a service token with one of these "
                      "roles revives an expired token)",
                      self._settings("service_token_roles = service\n")
                      .describe())

    def test_cache_time_zero_is_refused(self) -> None:
        # keystonemiddleware's cache reads 0 as "never expires".
        message = self._error(auth_strategy="keystone", keystone_config=(
            self._conf(_SERVICE_USER + "token_cache_time = 0\n")))
        self.assertIn("token_cache_time = 0", message)
        self.assertIn("use -1", message)

    def test_access_rules_need_the_catalog(self) -> None:
        # keystonemiddleware reads the token's catalog to check access
        # rules; without one it fails (KeyError, a 500).
        message = self._error(auth_strategy="keystone", keystone_config=(
            self._conf(_SERVICE_USER + "include_service_catalog = false\n")))
        self.assertIn("include_service_catalog = false", message)
        self.assertEqual(keystone.Settings(30, (), True, ""), self._settings(
            "include_service_catalog = false\nservice_type =\n"))

    def test_a_bad_value_is_one_line_naming_the_option(self) -> None:
        for extra, name, reason in (
                ("token_cache_time = soon\n", "token_cache_time",
                 "must be an integer"),
                ("http_connect_timeout = x\n", "http_connect_timeout",
                 "must be an integer"),
                ("memcache_security_strategy = rot13\n",
                 "memcache_security_strategy", "rot13")):
            message = self._error(auth_strategy="keystone", keystone_config=(
                self._conf(_SERVICE_USER + extra)))
            self.assertIn(f"invalid value for [keystone_authtoken] {name}: ",
                          message)
            self.assertIn(reason, message)
            self.assertEqual(1, len(message.splitlines()))
