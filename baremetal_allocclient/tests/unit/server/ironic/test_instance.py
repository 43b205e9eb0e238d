"""What a deploy keeps in instance_info (pure rules)."""

from __future__ import annotations

import testtools

from baremetal_allocclient.server.ironic import instance


class ConfigdriveTests(testtools.TestCase):
    def test_accepted(self) -> None:
        for verb, drive, minor in (("active", None, 1), ("manage", None, 1),
                                   ("active", "H4sI", 1),
                                   ("deploy", {"meta_data": {}}, 56),
                                   ("active", {"vendor_data": {}}, 59)):
            self.assertIsNone(instance.configdrive_error(verb, drive, minor))

    def test_refused_with_ironic_wording(self) -> None:
        for verb, drive, minor, fragment in (
            ("manage", "x", 73, "only supported when setting provision"),
            ("active", {"meta_data": {}}, 55, "starting with API version "
                                              "1.56"),
            ("active", {"vendor_data": {}}, 58, "API version 1.59"),
            ("active", {"bogus": 1}, 73, "('bogus' was unexpected)"),
            ("active", {"meta_data": "x"}, 73, "meta_data must be an"),
            ("active", 5, 73, "Invalid configdrive format"),
        ):
            error = instance.configdrive_error(verb, drive, minor)
            assert error is not None, (verb, drive)
            self.assertIn(fragment, error)


class InstanceInfoTests(testtools.TestCase):
    def test_image_type(self) -> None:
        self.assertIsNone(instance.image_type({}))
        self.assertEqual("whole-disk",
                         instance.image_type({"image_source": "i"}))
        self.assertEqual("partition", instance.image_type(
            {"image_source": "i", "kernel": "k", "ramdisk": "r"}))

    def test_deployed_keeps_drive_and_explicit_image_type(self) -> None:
        info = {"image_source": "i", "image_type": "partition"}
        self.assertEqual({**info, "configdrive": "d"},
                         instance.deployed(info, "d"))
        self.assertNotIn("configdrive", info)  # not changed in place
        self.assertEqual({}, instance.deployed(None, None))
