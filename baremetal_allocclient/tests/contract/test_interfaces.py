"""Hardware interfaces, firmware and virtual media of fake-hardware nodes.

A node may choose, per ``*_interface`` field, any implementation of
server/logic/interfaces.py (the contract suite's Ironic enables the same
ones); the ``no-*`` implementations fail validation.  Firmware listing
(1.86) is empty, and virtual media (1.89) is accepted but fails on fake
hardware, leaving ``last_error``.
"""

from __future__ import annotations

import time
from typing import Any

from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.functional import targets


class InterfaceContract(base.ContractMixin):
    """``*_interface`` values, /firmware and /vmedia."""

    def create(self, **fields: Any) -> dict[str, Any]:
        body: dict[str, Any] = self.target.expect(
            201, "POST", "/v1/nodes", {"driver": "fake-hardware", **fields})
        return body

    def test_interfaces_accepted_validated_and_patched(self) -> None:
        node = self.create(firmware_interface="no-firmware",
                           inspect_interface="no-inspect")
        uuid = node["uuid"]
        self.assertEqual(("no-firmware", "no-inspect", "fake", "noop"), (
            node["firmware_interface"], node["inspect_interface"],
            node["boot_interface"], node["network_interface"]))
        checks = self.target.expect(200, "GET", f"/v1/nodes/{uuid}/validate")
        # Every interface but vendor, core ones first, as Ironic lists them.
        self.assertEqual(["boot", "deploy", "management", "network", "power",
                          "bios", "console", "firmware", "inspect", "raid",
                          "rescue", "storage"], list(checks))
        self.assertFalse(checks["firmware"]["result"])
        self.assertEqual({"result": True}, checks["boot"])
        self.assertFalse(checks["inspect"]["result"])
        self.assertIn("fake-hardware does not support inspect",
                      checks["inspect"]["reason"])
        self.assertEqual({"firmware": []}, self.target.expect(
            200, "GET", f"/v1/nodes/{uuid}/firmware"))
        self.assertError(self.target.request(
            "GET", f"/v1/nodes/{uuid}/firmware", version="1.85"), 404)
        patched = self.target.expect(200, "PATCH", f"/v1/nodes/{uuid}", [
            {"op": "replace", "path": "/firmware_interface", "value": "fake"},
            {"op": "remove", "path": "/inspect_interface"}])
        self.assertEqual(("fake", "fake"), (
            patched["firmware_interface"], patched["inspect_interface"]))
        refused = self.target.request("POST", "/v1/nodes", {
            "driver": "fake-hardware", "boot_interface": "bogus"})
        self.assertError(
            refused, 400, "Could not find the following interface in the "
            "'ironic.hardware.interfaces.boot' entrypoint: bogus.")

    def last_error(self, uuid: str, fragment: str) -> str:
        deadline = time.monotonic() + 30
        while True:
            error = self.target.node(uuid)["last_error"] or ""
            if fragment in error or time.monotonic() > deadline:
                return str(error)
            time.sleep(0.2)

    def test_virtual_media_fails_on_fake_hardware(self) -> None:
        uuid = self.create()["uuid"]
        path = f"/v1/nodes/{uuid}/vmedia"
        media = {"device_type": "cdrom", "image_url": "http://127.0.0.1:9/x"}
        self.assertError(self.target.request(
            "POST", path, media, version="1.88"), 404)
        self.assertError(self.target.request(
            "POST", path, {**media, "image_url": "ftp://x/y"}), 400,
            "Unsupported or missing URL scheme: ftp")
        self.assertError(self.target.request(
            "POST", path, {**media, "device_type": "tape"}), 400)
        self.assertEqual(
            204, self.target.request("POST", path, media).status_code)
        attach = f"Could not attach device cdrom to node {uuid}"
        self.assertIn(attach, self.last_error(uuid, attach))
        self.assertEqual(204, self.target.request("DELETE", path).status_code)
        detach = (f"Could not detach device(s) None from node {uuid}: "
                  f"Driver fake-hardware does not support "
                  f"detach_virtual_media")
        self.assertIn(detach, self.last_error(uuid, detach))


# The broker passes these routes through to Ironic unchanged: the
# Ironic target checks its answers.
globals().update(targets.per_target(InterfaceContract, broker=False))
