"""``serve``'s security options: the loopback-only rule for noauth."""

from __future__ import annotations

import argparse
import os
import tempfile

import testtools

from baremetal_allocclient.server import cmd, security


def _resolver(mapping: dict[str, list[str]]) -> security.Resolver:
    def resolve(host: str) -> list[str]:
        if host not in mapping:
            raise OSError("unknown host")
        return mapping[host]
    return resolve


def _args(**kw: object) -> argparse.Namespace:
    args = cmd.parse(["serve", "--config-file", os.devnull])
    for key, value in kw.items():
        setattr(args, key, value)
    return args


class LoopbackTests(testtools.TestCase):

    def test_is_loopback(self) -> None:
        resolve = _resolver({"localhost": ["127.0.0.1", "::1"],
                             "box": ["192.0.2.1"],
                             "mixed": ["127.0.0.1", "192.0.2.1"]})
        for host, expected in (("127.0.0.1", True), ("127.1.2.3", True),
                               ("::1", True), ("[::1]", True),
                               ("0.0.0.0", False), ("::", False),
                               ("192.0.2.1", False), ("localhost", True),
                               ("box", False), ("mixed", False),
                               ("unknown", False)):
            self.assertEqual(expected, security.is_loopback(host, resolve),
                             host)

    def test_noauth_rule(self) -> None:
        resolve = _resolver({})
        self.assertIsNone(security.loopback_only_error(
            "noauth", "127.0.0.1", False, resolve))
        error = security.loopback_only_error("noauth", "0.0.0.0", False,
                                             resolve)
        assert error is not None
        self.assertIn(security.RISK_FLAG, error)
        self.assertIn("0.0.0.0", error)
        self.assertIsNone(security.loopback_only_error(
            "noauth", "0.0.0.0", True, resolve))
        self.assertIsNone(security.loopback_only_error(
            "http_basic", "0.0.0.0", False, resolve))

    def test_configure(self) -> None:
        self.assertRaises(security.SecurityConfigError, security.configure,
                          _args(host="0.0.0.0"))
        setup = security.configure(_args(
            host="0.0.0.0", allow_unauthenticated_remote_access=True))
        self.assertEqual("http", setup.scheme)
        self.assertIsNone(setup.tls_context)
        for bad in ({"auth_strategy": "http_basic"},
                    {"htpasswd": "/x"},
                    {"tls_cert": "/x"},
                    {"tls_cert": "/nonexistent", "tls_key": "/nonexistent"},
                    {"auth_strategy": "http_basic",
                     "htpasswd": "/nonexistent"}):
            self.assertRaises(security.SecurityConfigError,
                              security.configure, _args(**bad))

    def test_empty_htpasswd_is_refused(self) -> None:
        fd, path = tempfile.mkstemp()
        os.close(fd)
        self.addCleanup(os.unlink, path)
        error = self.assertRaises(
            security.SecurityConfigError, security.configure,
            _args(auth_strategy="http_basic", htpasswd=path))
        self.assertIn("no users", str(error))
