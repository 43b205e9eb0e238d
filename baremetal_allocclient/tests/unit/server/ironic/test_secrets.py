"""What node answers mask, as Ironic masks it."""

from __future__ import annotations

import testtools

from baremetal_allocclient.server.ironic import secrets


class SecretsTest(testtools.TestCase):
    def test_driver_info_passwords_and_snmp_keys(self) -> None:
        stored = {"ipmi_address": "192.0.2.1", "ipmi_username": "ADMIN",
                  "ipmi_password": "p", "redfish_password": "q",
                  "snmp_auth_key": "k", "snmp_priv_key": "",
                  "nested": {"auth_token": "t", "x": 1}}
        self.assertEqual(
            {"ipmi_address": "192.0.2.1", "ipmi_username": "ADMIN",
             "ipmi_password": "******", "redfish_password": "******",
             "snmp_auth_key": "******", "snmp_priv_key": "",
             "nested": {"auth_token": "******", "x": 1}},
            secrets.driver_info(stored))
        self.assertEqual("p", stored["ipmi_password"])  # not in place
        self.assertEqual({}, secrets.driver_info(None))

    def test_instance_info_drive_and_image_url(self) -> None:
        self.assertEqual(
            {"configdrive": "******", "image_url": "******", "a": 1,
             "image_source": "http://i"},
            secrets.instance_info({"configdrive": {"x": 1},
                                   "image_url": "http://swift/temp?sig=1",
                                   "a": 1, "image_source": "http://i"}))
        self.assertEqual({}, secrets.instance_info(None))

    def test_driver_internal_info(self) -> None:
        self.assertEqual(
            {"agent_secret_token": "******", "last_power_state_change": "t"},
            secrets.driver_internal_info({"agent_secret_token": "s",
                                          "last_power_state_change": "t"}))
