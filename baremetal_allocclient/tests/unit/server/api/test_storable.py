"""Values no database stores faithfully are refused before any SQL."""

from __future__ import annotations

import json

import testtools

from baremetal_allocclient.server.api import storable
from baremetal_allocclient.server.api.errors import ApiError


class LoadsTests(testtools.TestCase):
    def refused(self, raw: bytes) -> str:
        error = self.assertRaises(ApiError, storable.loads, raw)
        self.assertEqual(400, error.status)
        return error.message

    def test_non_finite_numbers_anywhere(self) -> None:
        for raw in (b"NaN", b'{"extra": {"a": [1, Infinity]}}',
                    b'[{"value": -Infinity}]', b'{"x": 1e400}',
                    b'{"x": {"y": -1.5e309}}'):
            self.assertIn("must be finite", self.refused(raw), raw)

    def test_nul_and_lone_surrogates_in_values_and_keys(self) -> None:
        for value in ("a\x00b", {"k": ["ok", "\x00"]}, {"a\x00": 1},
                      "\ud800", {"deep": [{"x": "tail\udfff"}]}):
            raw = json.dumps(value).encode()
            self.assertIn("not allowed", self.refused(raw), raw)

    def test_in_every_encoding_and_written_raw(self) -> None:
        # An ASCII UTF-8 body without an escape is not walked again: the
        # same values in UTF-16 or -32 (ASCII bytes, escapes spelled
        # with NULs between), raw in UTF-8, or as a raw control
        # character, are still refused.
        for value in ("a\x00b", {"k": "\ud800"}, {"\x00": 1}):
            escaped = json.dumps(value)
            for encoding in ("utf-16-le", "utf-16-be", "utf-32-le",
                             "utf-32-be", "utf-8-sig"):
                raw = escaped.encode(encoding)
                self.assertIn("not allowed", self.refused(raw), raw)
            raw = json.dumps(value, ensure_ascii=False).encode(
                "utf-8", "surrogatepass")
            self.assertIn("not allowed", self.refused(raw), raw)
        for raw in (b'{"a": "x\x00y"}', b'{"a\x00": 1}', b'["\x00"]'):
            self.assertIn("Invalid JSON", self.refused(raw), raw)

    def test_ordinary_documents_pass(self) -> None:
        value = {"name": "n\u00e9e", "emoji": "\U0001f600", "f": 1.5e308,
                 "i": 2 ** 63 - 1, "j": -(2 ** 63), "n": None,
                 "list": [True, -0.0, "%00", 5e-324]}
        self.assertEqual(value, storable.loads(json.dumps(value).encode()))

    def test_integers_out_of_64_bits_name_where_they_stood(self) -> None:
        # Read before int() sees them: 5,000 digits are past CPython's
        # limit on the conversion, whose text must not reach a client.
        non_ascii = '{"\\u00e9": [1e999, 1' + "0" * 30 + "]}"
        for raw, where in (
                (b'{"i": 9223372036854775808}', "/i:"),
                (b'{"a": [{"b": -9223372036854775809}]}', "/a/0/b:"),
                (b"[1, " + b"7" * 5000 + b"]", "/1:"),
                (b'{"a/b~c": 1' + b"0" * 400 + b"}", "/a~1b~0c:"),
                (non_ascii.encode(), "/\u00e9/0:")):
            message = self.refused(raw)
            self.assertIn(where, message)
            self.assertIn("out of range", message)
            self.assertNotIn("Exceeds the limit", message)
            self.assertLess(len(message), 200)

    def test_every_integer_of_a_walked_document_is_checked(self) -> None:
        # A YAML inventory is walked, not parsed here.
        self.assertIn("/properties/cpus:", storable.value_problem(
            {"properties": {"cpus": 2 ** 64}}))
        self.assertIsNone(storable.value_problem({"b": True, "i": -5}))

    def test_malformed_json_keeps_its_message(self) -> None:
        self.assertIn("Invalid JSON", self.refused(b"{bad"))


class CheckUrlTests(testtools.TestCase):
    def test_nul_in_path_or_query(self) -> None:
        for path, params in (("/v1/nodes/a\x00b", []),
                             ("/v1/nodes", [("owner", "x\x00")]),
                             ("/v1/nodes", [("a\x00", "1")]),
                             ("/v1/nodes", [("owner", "\udc80")])):
            error = self.assertRaises(ApiError, storable.check_url, path,
                                      params)
            self.assertEqual(400, error.status)

    def test_ordinary_urls_pass(self) -> None:
        storable.check_url("/v1/nodes/n\u00e9", [("owner", "p\u00e9")])
