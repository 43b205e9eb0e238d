"""The --os-baremetal-api-version values."""

from __future__ import annotations

import testtools

from baremetal_allocclient.osc import versioning


class TestParseApiVersion(testtools.TestCase):
    def test_negotiate(self) -> None:
        for value in (None, "", "latest", "LATEST", "1", " 1 "):
            self.assertIsNone(versioning.parse_api_version(value), value)

    def test_pinned(self) -> None:
        self.assertEqual((1, 58), versioning.parse_api_version("1.58"))
        self.assertEqual((1, 0), versioning.parse_api_version("1.0"))

    def test_invalid(self) -> None:
        for value in ("2.1", "1.x", "1.05", "v1.60", "1.60.1"):
            self.assertRaises(
                versioning.InvalidApiVersion,
                versioning.parse_api_version,
                value,
            )
