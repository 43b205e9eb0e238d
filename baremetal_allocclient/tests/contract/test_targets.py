"""The pure parts of the test-target harness (no server is started).

The contract suite's verdicts rest on these: error bodies must be decoded
the way Ironic nests them, Ironic must be configured as the notes say, and
``per_target`` must give each target its own class with the target set
before the mixin's own class set-up runs.
"""

from __future__ import annotations

import json
import unittest
from typing import Any, ClassVar
from unittest import mock

import requests
import testtools

from baremetal_allocclient.tests.functional import targets


def _response(status: int, body: object) -> requests.Response:
    response = requests.Response()
    response.status_code = status
    response._content = (body if isinstance(body, bytes)
                         else json.dumps(body).encode())
    return response


class TestErrorMessage(testtools.TestCase):
    """Decoding Ironic's nested error document."""

    def test_faultstring_inside_a_json_string(self) -> None:
        inner = json.dumps({"faultcode": "Client", "faultstring": "boom",
                            "debuginfo": None})
        self.assertEqual("boom", targets.error_message(
            _response(400, {"error_message": inner})))

    def test_description_of_version_errors(self) -> None:
        inner = json.dumps({"code": 406, "title": "Not Acceptable",
                            "description": "Version 9.9 was requested"})
        self.assertEqual("Version 9.9 was requested", targets.error_message(
            _response(406, {"error_message": inner})))

    def test_plain_string_and_non_json_bodies(self) -> None:
        self.assertEqual("plain", targets.error_message(
            _response(500, {"error_message": "plain"})))
        self.assertEqual("<html>", targets.error_message(
            _response(502, b"<html>")))
        self.assertEqual('{"other": 1}', targets.error_message(
            _response(500, {"other": 1})))

    def test_lock_errors_are_recognised(self) -> None:
        locked = json.dumps({"faultstring": "(sqlite3.OperationalError) "
                             "database is locked"})
        self.assertTrue(targets._is_locked(
            _response(500, {"error_message": locked})))
        self.assertFalse(targets._is_locked(
            _response(409, {"error_message": locked})))


class TestIronicConfig(testtools.TestCase):
    """The all-in-one, fake-hardware, noauth configuration."""

    def test_settings(self) -> None:
        text = targets.ironic_config("/tmp/x", 4321)
        for line in ("auth_strategy = noauth", "rpc_transport = none",
                     "enabled_hardware_types = fake-hardware",
                     "default_power_interface = fake",
                     "default_network_interface = noop",
                     "default_storage_interface = noop",
                     "automated_clean = false", "port = 4321",
                     "host_ip = 127.0.0.1", "api_workers = 1",
                     "connection = sqlite:////tmp/x/ironic.sqlite?timeout=30",
                     "state_path = /tmp/x/state"):
            self.assertIn(line + "\n", text)

    def test_switch_skips_only_on_zero(self) -> None:
        with mock.patch.dict("os.environ",
                             {targets.IRONIC_SWITCH_ENV: "0"}):
            self.assertRaises(unittest.SkipTest, targets.ironic_target)


class _Probe:
    """A mixin recording what its class set-up saw."""

    seen: ClassVar[list[Any]] = []

    @classmethod
    def setUpClass(cls) -> None:
        cls.seen.append(getattr(cls, "target", None))
        super().setUpClass()  # type: ignore[misc]

    def test_nothing(self) -> None:
        """Present so the class is a runnable test case."""


class TestPerTarget(testtools.TestCase):
    """One class per target; the target is set before mixin set-up."""

    def test_classes_and_set_up(self) -> None:
        fake = {"Reference": mock.sentinel.ref, "Ironic": mock.sentinel.iro}
        factories = {k: (lambda v=v: v) for k, v in fake.items()}
        with mock.patch.dict(targets.TARGET_FACTORIES, factories,
                             clear=True):
            classes = targets.per_target(_Probe)
            self.assertEqual({"Test_ProbeReference", "Test_ProbeIronic"},
                             set(classes))
            _Probe.seen.clear()
            for cls in classes.values():
                assert issubclass(cls, unittest.TestCase)
                cls.setUpClass()
            self.assertEqual([mock.sentinel.ref, mock.sentinel.iro],
                             _Probe.seen)
