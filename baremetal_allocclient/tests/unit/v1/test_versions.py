"""Table tests of the pure microversion decisions."""

from __future__ import annotations

import testtools

from baremetal_allocclient import exceptions
from baremetal_allocclient.v1 import versions


class ParseTest(testtools.TestCase):

    def test_parse_and_format(self) -> None:
        self.assertEqual((1, 60), versions.parse_version("1.60"))
        self.assertEqual("1.5", versions.format_version((1, 5)))
        for bad in ("", "1", "1.", "v1.2", "1.2.3", "latest"):
            self.assertRaises(exceptions.InvalidArgument,
                              versions.parse_version, bad)

    def test_pins(self) -> None:
        for negotiate in (None, "latest", "LATEST", "1"):
            self.assertIsNone(versions.parse_pin(negotiate))
        self.assertEqual((1, 58), versions.parse_pin("1.58"))
        self.assertEqual((1, 52), versions.parse_pin((1, 52)))
        for bad in ("1.66", (2, 0), "x"):
            self.assertRaises(exceptions.InvalidArgument,
                              versions.parse_pin, bad)


class RangeTest(testtools.TestCase):

    def test_headers(self) -> None:
        self.assertEqual(((1, 1), (1, 99)), versions.range_from_headers({
            versions.MIN_VERSION_HEADER: "1.1",
            versions.MAX_VERSION_HEADER: "1.99"}))
        self.assertIsNone(versions.range_from_headers({}))
        self.assertIsNone(versions.range_from_headers({
            versions.MIN_VERSION_HEADER: "1.1",
            versions.MAX_VERSION_HEADER: "junk"}))

    def test_documents(self) -> None:
        root = {"versions": [{"id": "v1", "min_version": "1.1",
                              "version": "1.87"}]}
        v1 = {"id": "v1", "version": {"id": "v1", "min_version": "1.1",
                                      "version": "1.60"}}
        self.assertEqual(((1, 1), (1, 87)),
                         versions.range_from_document(root))
        self.assertEqual(((1, 1), (1, 60)), versions.range_from_document(v1))
        for useless in (None, [], {"versions": [{"id": "v2",
                                                 "min_version": "2.0",
                                                 "version": "2.1"}]}):
            self.assertIsNone(versions.range_from_document(useless))


class DecisionTest(testtools.TestCase):

    def test_choose(self) -> None:
        self.assertEqual(versions.CLIENT_MAX_VERSION,
                         versions.choose_version(None))
        self.assertEqual((1, 55),
                         versions.choose_version(((1, 1), (1, 55))))
        self.assertEqual((1, 65),
                         versions.choose_version(((1, 1), (1, 115))))

    def test_features(self) -> None:
        table = [
            (versions.ALLOCATIONS, (1, 52)),
            (versions.ALLOCATION_UPDATE, (1, 57)),
            (versions.ALLOCATION_BACKFILL, (1, 58)),
            (versions.ALLOCATION_OWNER, (1, 60)),
        ]
        for feature, needed in table:
            versions.check_feature(feature, needed, server_range=None,
                                   pinned=None)
            below = (needed[0], needed[1] - 1)
            error = self.assertRaises(
                exceptions.VersionNotSupported, versions.check_feature,
                feature, below, server_range=((1, 1), below), pinned=None)
            self.assertEqual(needed, error.required)
            self.assertIn(feature.description, str(error))

    def test_version_rejection(self) -> None:
        self.assertTrue(versions.is_version_rejection((1, 60), None))
        self.assertTrue(
            versions.is_version_rejection((1, 60), ((1, 1), (1, 55))))
        self.assertTrue(
            versions.is_version_rejection((1, 1), ((1, 31), (1, 60))))
        self.assertFalse(
            versions.is_version_rejection((1, 60), ((1, 1), (1, 60))))
