"""Version header parsing."""

from __future__ import annotations

import testtools

from baremetal_allocclient.server.api import versions
from baremetal_allocclient.server.api.versions import Version


class ParseTests(testtools.TestCase):
    def test_accepted(self) -> None:
        cases = [
            (None, versions.MIN_VERSION),
            ("", versions.MIN_VERSION),
            ("latest", versions.MAX_VERSION),
            (" LATEST ", versions.MAX_VERSION),
            ("1.52", Version(1, 52)),
            ("1.1", Version(1, 1)),
            (str(versions.MAX_VERSION), versions.MAX_VERSION),
        ]
        for header, expected in cases:
            self.assertEqual(expected, versions.parse(header))

    def test_refused(self) -> None:
        cases = [
            ("1.0", "Version 1.0 was requested but the minor version is "
             "not supported"),
            ("2.1", "Mutually exclusive versions"),
            ("0.5", "Mutually exclusive versions"),
            (f"1.{versions.MAX_VERSION.minor + 1}",
             "the minor version is not supported by this service. The "
             "supported version range is: [1.1, "),
            ("abc", "Invalid value"),
            ("1", "Invalid value"),
            ("1.5.1", "Invalid value"),
        ]
        for header, words in cases:
            error = self.assertRaises(versions.VersionError,
                                      versions.parse, header)
            self.assertIn(words, str(error))

    def test_documents(self) -> None:
        root = versions.root_document("http://h:1")
        self.assertEqual("1.1", root["default_version"]["min_version"])
        self.assertEqual(str(versions.MAX_VERSION),
                         root["versions"][0]["version"])
        v1 = versions.v1_document("http://h:1", 52)
        self.assertEqual("http://h:1/v1/allocations/",
                         v1["allocations"][0]["href"])
        self.assertNotIn("shards", v1)
        self.assertNotIn("allocations", versions.v1_document("http://h:1", 51))
        self.assertIn("shards", versions.v1_document("http://h:1", 82))
        self.assertGreaterEqual(versions.MAX_VERSION, Version(1, 60))
