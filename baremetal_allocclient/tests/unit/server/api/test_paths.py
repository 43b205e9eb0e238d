"""Ironic's path rules: version-less paths are v1, ``.json`` is dropped
below API 1.91 (``server/api/paths.py``)."""

from __future__ import annotations

from typing import Any

import testtools

from baremetal_allocclient.server.api import paths


class CanonicalTests(testtools.TestCase):
    def test_version_less_paths_are_v1(self) -> None:
        for path, served in (
            ("/nodes/abc/allocation", "/v1/nodes/abc/allocation"),
            ("/chassis", "/v1/chassis"),
            ("/chassis/", "/v1/chassis/"),
            ("/v1/nodes", "/v1/nodes"),
            ("/v1", "/v1"),
            ("/", "/"),
            ("", ""),
            ("/v2/nodes", "/v1/v2/nodes"),  # as Ironic: then a 404
            ("/metrics", "/metrics"),
        ):
            self.assertEqual(served, paths.canonical(
                path, "1.90", unversioned=("/metrics",)), path)

    def test_json_suffix_dropped_from_1_1_to_1_90(self) -> None:
        path = "/v1/allocations/x.json"
        for header, served in (
            ("1.90", "/v1/allocations/x"),
            ("1.1", "/v1/allocations/x"),
            (" 1.52 ", "/v1/allocations/x"),
            ("1.91", path),
            ("1.115", path),
            ("1.0", path),  # Ironic reads minor 0 as "no version"
            (None, path),
            ("", path),
            ("latest", path),
            ("1.x", path),
        ):
            self.assertEqual(served, paths.canonical(path, header), header)
        self.assertEqual("/v1/nodes/n", paths.canonical("/nodes/n.json/",
                                                        "1.90"))

    def test_middleware_rewrites_path_info(self) -> None:
        seen: list[str] = []

        def app(environ: dict[str, Any], start: Any) -> list[bytes]:
            seen.append(environ["PATH_INFO"])
            return []

        wrapped = paths.CanonicalPaths(app, unversioned=("/metrics",))
        wrapped({"PATH_INFO": "/nodes/a.json",
                 "HTTP_X_OPENSTACK_IRONIC_API_VERSION": "1.50"}, None)
        wrapped({"PATH_INFO": "/metrics"}, None)
        self.assertEqual(["/v1/nodes/a", "/metrics"], seen)
